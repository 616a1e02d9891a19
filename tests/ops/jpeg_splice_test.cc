// Crop decodes of JPEGs with restart markers, which read only the restart
// segments their window covers (ops/internal/jpeg_splice.h): the pixels must
// equal the window of the full decode for every sampling, scale, DCT method
// and window, and anything the splicer does not understand must fall back to
// the ordinary path.
#include "sluice/ops/internal/jpeg_splice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec_golden.h"
#include "sluice/ops/internal/simd.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops {
namespace {

using ops_internal::JpegSegments;
using ops_internal::ParseJpegSegments;
using testing::MaxAbsDiff;

// Noisy shading with edges, so chroma differs between neighbors.
Tensor Picture(int64_t h, int64_t w, int64_t c, uint32_t seed) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, c}).value();
  uint8_t* p = t.flat<uint8_t>().data();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        seed = seed * 1664525u + 1013904223u;
        const int64_t v = ((x * (3 + k) + y * (5 - k)) % 256 + ((x / 9 + y / 7) % 2) * 60 +
                           static_cast<int64_t>(seed >> 27)) %
                          256;
        p[(y * w + x) * c + k] = static_cast<uint8_t>(v);
      }
    }
  }
  return t;
}

std::string Jpeg(int64_t h, int64_t w, int64_t c, int restart, bool subsample = true) {
  EncodeJpegOptions o;
  o.quality = 90;
  o.restart_interval = restart;
  o.chroma_downsampling = subsample;
  return EncodeJpeg(Picture(h, w, c, static_cast<uint32_t>(h * 31 + w)), o).value();
}

Tensor CropOf(const Tensor& image, const JpegCropWindow& w) {
  return testing::CropOf(image, w.y, w.x, w.height, w.width);
}

TEST(JpegSplice, ParsesTheSegmentGrid) {
  // 4:2:0, 100x37: MCUs are 16x16, 7 per row, 3 rows.
  const std::string row = Jpeg(37, 100, 3, 7);
  std::optional<JpegSegments> s = ParseJpegSegments(row);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->segs_per_row, 1);
  EXPECT_EQ(s->seg_rows, 3);
  EXPECT_EQ(s->seg_height, 16);
  EXPECT_EQ(s->starts.size(), 3u);
  // Interval 1: 21 segments of one MCU.
  s = ParseJpegSegments(Jpeg(37, 100, 3, 1));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->segs_per_row, 7);
  EXPECT_EQ(s->seg_width, 16);
  EXPECT_EQ(s->starts.size(), 21u);
  // Two MCU rows per segment: 2 segments, the last one shorter.
  s = ParseJpegSegments(Jpeg(37, 100, 3, 14));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->seg_height, 32);
  EXPECT_EQ(s->seg_rows, 2);
  // Gray: one 8x8 block per MCU, 13 per row; interval 13 is a row.
  s = ParseJpegSegments(Jpeg(37, 100, 1, 13));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->seg_height, 8);
  EXPECT_EQ(s->seg_rows, 5);
}

TEST(JpegSplice, NoUsableMarkersMeansNoLayout) {
  EXPECT_FALSE(ParseJpegSegments(Jpeg(64, 64, 3, 0)).has_value());  // no DRI
  EncodeJpegOptions progressive;
  progressive.progressive = true;
  progressive.restart_interval = 1;
  EXPECT_FALSE(
      ParseJpegSegments(EncodeJpeg(Picture(64, 64, 3, 1), progressive).value()).has_value());
  const std::string good = Jpeg(64, 64, 3, 1);
  ASSERT_TRUE(ParseJpegSegments(good).has_value());
  // Truncated (no EOI), a marker renumbered, one missing, one extra.
  EXPECT_FALSE(ParseJpegSegments(good.substr(0, good.size() - 2)).has_value());
  const size_t rst = good.find("\xFF\xD1");
  ASSERT_NE(rst, std::string::npos);
  std::string bad = good;
  bad[rst + 1] = static_cast<char>(0xD2);
  EXPECT_FALSE(ParseJpegSegments(bad).has_value());
  bad = good;
  bad.erase(rst, 2);
  EXPECT_FALSE(ParseJpegSegments(bad).has_value());
  bad = good;
  bad.insert(good.size() - 2, "\xFF\xD0");
  EXPECT_FALSE(ParseJpegSegments(bad).has_value());
  EXPECT_FALSE(ParseJpegSegments("").has_value());
  EXPECT_FALSE(ParseJpegSegments(good.substr(0, 30)).has_value());
}

// The marker scan has AVX-512, SSE2 and scalar loops (the last for the
// final bytes): all find the same segments, including files whose segments
// are a byte or two long (many markers per 64-byte block) and fill bytes
// (0xFF 0xFF) before a marker.
TEST(JpegSplice, EveryScanPathFindsTheSameSegments) {
  std::vector<std::string> files = {Jpeg(37, 100, 3, 1), Jpeg(64, 64, 3, 1), Jpeg(200, 120, 1, 1),
                                    Jpeg(37, 100, 3, 14)};
  // Flat gray: every 8x8 segment codes in a byte or two.
  Tensor flat = Tensor::Allocate(DType::kUInt8, Shape{64, 256, 1}).value();
  std::memset(flat.raw_data(), 77, flat.byte_size());
  EncodeJpegOptions o;
  o.restart_interval = 1;
  files.push_back(EncodeJpeg(flat, o).value());
  // A fill byte before the fifth marker.
  std::string fill = Jpeg(64, 64, 3, 1);
  size_t at = 0;
  for (int found = 0; found < 5; ++at) {
    const auto b = static_cast<uint8_t>(fill[at + 1]);
    if (static_cast<uint8_t>(fill[at]) == 0xFF && b >= 0xD0 && b <= 0xD7) ++found;
  }
  fill.insert(at - 1, "\xFF");
  files.push_back(fill);
  for (size_t f = 0; f < files.size(); ++f) {
    const std::optional<JpegSegments> best = ParseJpegSegments(files[f]);
    ASSERT_TRUE(best.has_value()) << f;
    for (bool* off :
         {&ops_internal::Avx512DisabledForTesting(), &ops_internal::Avx2DisabledForTesting()}) {
      *off = true;
      const std::optional<JpegSegments> other = ParseJpegSegments(files[f]);
      *off = false;
      ASSERT_TRUE(other.has_value()) << f;
      EXPECT_EQ(other->starts, best->starts) << f;
      EXPECT_EQ(other->ends, best->ends) << f;
    }
  }
  // The flat file has more than four markers in some 64-byte block.
  const std::optional<JpegSegments> flat_segments = ParseJpegSegments(files[4]);
  ASSERT_TRUE(flat_segments.has_value());
  EXPECT_EQ(flat_segments->starts.size(), 256u);
  EXPECT_LT(flat_segments->starts[8] - flat_segments->starts[0], 64u);
  // The fill byte is not part of the segment before it.
  const std::optional<JpegSegments> plain = ParseJpegSegments(Jpeg(64, 64, 3, 1));
  const std::optional<JpegSegments> filled = ParseJpegSegments(fill);
  ASSERT_TRUE(plain.has_value() && filled.has_value());
  EXPECT_EQ(filled->ends[4], plain->ends[4]);
  EXPECT_EQ(filled->starts[5], plain->starts[5] + 1);
}

// Every window, scale, sampling and DCT method: the spliced crop equals the
// window of the full decode, bit for bit.
TEST(JpegSplice, CropsEqualTheFullDecode) {
  struct Image {
    int64_t h, w, c;
    int restart;
    bool subsample;
  };
  const Image images[] = {
      {301, 437, 3, 1, true},  {301, 437, 3, 2, true},  {301, 437, 3, 28, true},
      {301, 437, 3, 56, true}, {120, 200, 3, 1, false}, {120, 200, 3, 5, false},
      {99, 130, 1, 1, true},   {99, 130, 1, 17, true},  {33, 17, 3, 1, true},
      {375, 500, 3, 4, true},
  };
  std::mt19937 gen(7);
  int spliced = 0;
  for (const Image& im : images) {
    const std::string bytes = Jpeg(im.h, im.w, im.c, im.restart, im.subsample);
    ASSERT_TRUE(ParseJpegSegments(bytes).has_value()) << im.h << "x" << im.w;
    for (int ratio : {1, 2, 4, 8}) {
      for (bool fancy : {true, false}) {
        for (JpegDctMethod dct : {JpegDctMethod::kIntegerFast, JpegDctMethod::kIntegerAccurate}) {
          DecodeJpegOptions o;
          o.ratio = ratio;
          o.fancy_upscaling = fancy;
          o.dct_method = dct;
          o.strict = true;
          const Tensor full = DecodeJpeg(bytes, o).value();
          const int64_t H = full.shape().dim(0), W = full.shape().dim(1);
          for (int t = 0; t < 12; ++t) {
            JpegCropWindow w;
            w.height = std::uniform_int_distribution<int64_t>(1, H)(gen);
            w.width = std::uniform_int_distribution<int64_t>(1, W)(gen);
            w.y = std::uniform_int_distribution<int64_t>(0, H - w.height)(gen);
            w.x = std::uniform_int_distribution<int64_t>(0, W - w.width)(gen);
            if (t == 0) w = {0, 0, H, W};
            if (t == 1) w = {H - 1, W - 1, 1, 1};
            if (t >= 2 && t < 7) {
              // Edges at a segment border (ratio 1: every 16 or 8 pixels),
              // and one or two pixels either side of it.
              const int64_t off = t - 4, cell = 16 / ratio > 0 ? 16 / ratio : 1;
              w.y = std::clamp<int64_t>(cell * (1 + t % 3) + off, 0, H - 1);
              w.x = std::clamp<int64_t>(cell * (2 + t % 2) + off, 0, W - 1);
              w.height = std::clamp<int64_t>(cell * 2 - off - (w.y % 5), 1, H - w.y);
              w.width = std::clamp<int64_t>(cell * 3 + off, 1, W - w.x);
            }
            Result<Tensor> crop = DecodeAndCropJpeg(bytes, w, o);
            ASSERT_TRUE(crop.ok()) << crop.status();
            ASSERT_EQ(MaxAbsDiff(*crop, CropOf(full, w)), 0)
                << im.h << "x" << im.w << "x" << im.c << " restart " << im.restart << " ratio "
                << ratio << " fancy " << fancy << " window y=" << w.y << " x=" << w.x
                << " h=" << w.height << " w=" << w.width;
            ++spliced;
          }
        }
      }
    }
  }
  EXPECT_EQ(spliced, 10 * 4 * 2 * 2 * 12);
}

// The spliced file holds only the window's segments (plus margins).
TEST(JpegSplice, ReadsOnlyTheWindowsSegments) {
  const std::string bytes = Jpeg(375, 500, 3, 1);
  std::optional<JpegSegments> s = ParseJpegSegments(bytes);
  ASSERT_TRUE(s.has_value());
  std::string out;
  // 64x64 pixels in the middle: 4x4 MCUs, plus at most one on each side.
  const ops_internal::ScaledWindow at =
      ops_internal::SpliceJpegWindow(bytes, *s, {160, 200, 64, 64}, 1, 2, &out);
  EXPECT_LT(out.size(), bytes.size() / 10);
  EXPECT_GE(at.y, 0);
  EXPECT_GE(at.x, 0);
  Result<Tensor> small = DecodeJpeg(out, {.strict = true});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_LE(small->shape().dim(0), 6 * 16);
  EXPECT_LE(small->shape().dim(1), 6 * 16);
  // A window flush with segment borders needs the neighbors for upsampling.
  SpliceJpegWindow(bytes, *s, {160, 208, 32, 32}, 1, 2, &out);
  small = DecodeJpeg(out, {.strict = true});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->shape().dim(0), 64);  // rows 144..208: one MCU row each side
}

// A file whose markers the parser rejects still decodes (whole-file path),
// and errors name the input as before.
TEST(JpegSplice, FallsBackAndReportsErrors) {
  const std::string good = Jpeg(120, 160, 3, 1);
  const JpegCropWindow w{40, 50, 30, 60};
  std::string renumbered = good;
  const size_t rst = renumbered.find("\xFF\xD3");
  ASSERT_NE(rst, std::string::npos);
  renumbered[rst + 1] = static_cast<char>(0xD5);  // libjpeg resyncs, with a warning
  Result<Tensor> lenient = DecodeAndCropJpeg(renumbered, w);
  EXPECT_TRUE(lenient.ok()) << lenient.status();
  Result<Tensor> truncated =
      DecodeAndCropJpeg(good.substr(0, good.size() / 2), w, {.name = "half.jpg"});
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("half.jpg"), std::string::npos);
  // Out-of-image windows are still InvalidArgument from the ordinary path.
  Result<Tensor> outside = DecodeAndCropJpeg(good, {100, 0, 30, 10}, {.name = "x.jpg"});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("x.jpg"), std::string::npos);
  // min_width/min_height pick the scale from the original size.
  DecodeJpegOptions min;
  min.min_width = 40;
  min.min_height = 30;
  const Tensor quarter = DecodeJpeg(good, min).value();
  ASSERT_EQ(quarter.shape().dim(0), 30);
  Result<Tensor> crop = DecodeAndCropJpeg(good, {5, 7, 20, 25}, min);
  ASSERT_TRUE(crop.ok()) << crop.status();
  EXPECT_EQ(MaxAbsDiff(*crop, CropOf(quarter, {5, 7, 20, 25})), 0);
}

}  // namespace
}  // namespace sluice::ops
