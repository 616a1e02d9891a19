// DecodeJpegRegion (ops/internal/jpeg_region.h), the zero-copy crop decode of
// the fused decode + crop + resize path: its view must hold exactly the
// pixels of DecodeAndCropJpeg, and fail where it fails, for every golden
// file (samplings, gray, CMYK, YCCK, progressive), the same files with
// restart markers (spliced decodes), scales, channel counts, a progressive
// file that ends early (whole rows decoded and dropped), and truncation.
#include "sluice/ops/internal/jpeg_region.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "codec_golden.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using ops_internal::DecodeJpegRegion;
using ops_internal::JpegRegion;
using testing::CodecGolden;

// The region's pixels, row by row, equal the dense crop.
void ExpectSamePixels(const JpegRegion& r, const Tensor& crop, const std::string& context) {
  ASSERT_EQ(crop.shape(), (Shape{r.height, r.width, r.channels})) << context;
  ASSERT_GE(r.row_stride, r.width * r.channels) << context;
  const auto* want = static_cast<const uint8_t*>(crop.raw_data());
  const int64_t row = r.width * r.channels;
  for (int64_t y = 0; y < r.height; ++y) {
    ASSERT_EQ(std::memcmp(r.data + y * r.row_stride, want + y * row, row), 0)
        << context << ", row " << y;
  }
}

void CheckFile(const std::string& name, const std::string& bytes) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Shape full, JpegOutputShape(bytes, {}));
  const int64_t H = full.dim(0), W = full.dim(1);
  uint32_t seed = static_cast<uint32_t>(bytes.size());
  auto next = [&seed](int64_t n) {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<int64_t>(seed >> 8) % n;
  };
  for (int channels : {0, 1, 3}) {
    for (int ratio : {1, 2}) {
      const int64_t h = (H + ratio - 1) / ratio, w = (W + ratio - 1) / ratio;
      for (int i = 0; i < 6; ++i) {
        JpegCropWindow win;
        win.height = 1 + next(h);
        win.width = 1 + next(w);
        win.y = next(h - win.height + 1);
        win.x = next(w - win.width + 1);
        DecodeJpegOptions o;
        o.channels = channels;
        o.ratio = ratio;
        const std::string context = name + " channels " + std::to_string(channels) + " ratio " +
                                    std::to_string(ratio) + " window " + std::to_string(win.y) +
                                    "," + std::to_string(win.x) + " " + std::to_string(win.height) +
                                    "x" + std::to_string(win.width);
        SLUICE_ASSERT_OK_AND_ASSIGN(Tensor crop, DecodeAndCropJpeg(bytes, win, o));
        JpegRegion region;
        ASSERT_TRUE(DecodeJpegRegion(bytes, win, o, &region).ok()) << context;
        ExpectSamePixels(region, crop, context);
      }
    }
  }
}

TEST(DecodeJpegRegion, EqualsDecodeAndCropForEveryGoldenFile) {
  for (const char* file : {"rgb420_q90.jpg", "rgb444_q90.jpg", "gray_q90.jpg", "rgb420_prog.jpg",
                           "big420_q85.jpg", "rgb422.jpg", "rgb440.jpg", "rgb411.jpg",
                           "cmyk_adobe.jpg", "cmyk_plain.jpg", "ycck_adobe.jpg"}) {
    const std::string bytes = CodecGolden::Read(file);
    CheckFile(file, bytes);
    // With a restart marker every MCU: the spliced path.
    SLUICE_ASSERT_OK_AND_ASSIGN(std::string marked, AddJpegRestartMarkers(bytes, {.interval = 1}));
    CheckFile(std::string(file) + " with restart markers", marked);
  }
}

TEST(DecodeJpegRegion, EqualsDecodeAndCropForAProgressiveFileEndingEarly) {
  // libjpeg smooths such files: crops decode whole rows and drop them.
  const std::string bytes = CodecGolden::Read("rgb420_prog.jpg");
  size_t cut = 0;
  for (size_t i = 0, scans = 0; i + 1 < bytes.size() && cut == 0; ++i) {
    if (static_cast<uint8_t>(bytes[i]) == 0xFF && static_cast<uint8_t>(bytes[i + 1]) == 0xDA &&
        ++scans == 3) {
      cut = i;
    }
  }
  ASSERT_GT(cut, 0u);
  CheckFile("rgb420_prog.jpg, two scans", bytes.substr(0, cut) + "\xFF\xD9");
}

TEST(DecodeJpegRegion, FailsWhereDecodeAndCropFails) {
  const std::string bytes = CodecGolden::Read("rgb420_q90.jpg");
  const JpegCropWindow win{8, 8, 40, 40};
  for (const std::string& bad :
       {bytes.substr(0, bytes.size() / 2), bytes.substr(0, 100), std::string()}) {
    DecodeJpegOptions o;
    o.strict = true;
    const Result<Tensor> crop = DecodeAndCropJpeg(bad, win, o);
    JpegRegion region;
    const Status s = DecodeJpegRegion(bad, win, o, &region);
    ASSERT_FALSE(crop.ok());
    EXPECT_EQ(s.code(), crop.status().code());
    EXPECT_EQ(s.message(), crop.status().message());
  }
  // Recovering (TF's try_recover_truncated): the rows past the end of the
  // data are zeros in both.
  const std::string big = CodecGolden::Read("big420_q85.jpg");
  const std::string half = big.substr(0, big.size() / 2);
  SLUICE_ASSERT_OK_AND_ASSIGN(Shape full, JpegOutputShape(big, {}));
  const JpegCropWindow tall{0, 0, full.dim(0), full.dim(1) / 2};
  DecodeJpegOptions recover;
  recover.try_recover_truncated = true;
  recover.acceptable_fraction = 0.0f;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor crop, DecodeAndCropJpeg(half, tall, recover));
  JpegRegion region;
  ASSERT_TRUE(DecodeJpegRegion(half, tall, recover, &region).ok());
  ExpectSamePixels(region, crop, "truncated, lenient");
  // A window outside the image.
  JpegRegion outside;
  EXPECT_FALSE(DecodeJpegRegion(big, {0, 0, full.dim(0) + 1, 1}, {}, &outside).ok());
}

}  // namespace
}  // namespace sluice::ops
