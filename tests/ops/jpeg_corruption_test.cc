// Bad input for the JPEG decoder (and DecodeImage): truncation at every
// offset, flipped bytes, empty input, headers claiming huge images, 12-bit
// data, too many progressive scans, recoverable corruption in strict mode.
// Every outcome must be a decoded image or a clear error (the right code,
// the file name in the message): never a crash, a hang or a huge
// allocation. Also run under ASan/UBSan.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "codec_golden.h"
#include "sluice/core/rng.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/jpeg.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using testing::CodecGolden;
using testing::ExpectCleanOutcome;
using testing::FindJpegMarker;
using testing::JpegClaiming;

const char* const kJpegs[] = {"rgb420_q90.jpg",  "rgb444_q90.jpg", "gray_q90.jpg",
                              "rgb420_prog.jpg", "big420_q85.jpg", "cmyk_adobe.jpg",
                              "ycck_adobe.jpg",  "rgb422.jpg",     "rgb411.jpg"};
TEST(JpegCorruption, TruncatedAtEveryOffset) {
  for (const char* file : kJpegs) {
    const std::string jpeg = CodecGolden::Read(file);
    DecodeJpegOptions plain, recover, strict, scaled;
    plain.name = recover.name = strict.name = scaled.name = file;
    recover.try_recover_truncated = true;
    strict.strict = true;
    scaled.ratio = 2;
    scaled.acceptable_fraction = 0.5f;
    const Tensor full = DecodeJpeg(jpeg, plain).value();
    for (size_t n = 0; n < jpeg.size(); ++n) {
      const std::string_view cut(jpeg.data(), n);
      const std::string context = std::string(file) + " cut at " + std::to_string(n);
      const Result<Tensor> a = DecodeJpeg(cut, plain);
      ExpectCleanOutcome(a, file, context);
      if (a.ok()) {
        EXPECT_EQ(a->shape(), full.shape()) << context;
      }
      ExpectCleanOutcome(DecodeJpeg(cut, recover), file, context);
      ExpectCleanOutcome(DecodeJpeg(cut, scaled), file, context);
      ExpectCleanOutcome(DecodeAndCropJpeg(cut, {1, 2, 5, 7}, plain), file, context);
      ExpectCleanOutcome(ReadJpegHeader(cut, file), file, context);
      // Strict mode accepts nothing short of the whole file.
      if (n + 2 < jpeg.size()) {
        EXPECT_FALSE(DecodeJpeg(cut, strict).ok()) << context;
      }
    }
    SLUICE_EXPECT_OK(DecodeJpeg(jpeg, strict));
  }
}

TEST(JpegCorruption, FlippedBytes) {
  Rng rng(42);
  for (const char* file : kJpegs) {
    const std::string jpeg = CodecGolden::Read(file);
    DecodeJpegOptions o;
    o.name = file;
    o.max_pixels = 1 << 20;  // a flipped SOF may claim a large image
    for (int trial = 0; trial < 1500; ++trial) {
      std::string bad = jpeg;
      const int flips = 1 + static_cast<int>(rng.UniformInt(3));
      for (int f = 0; f < flips; ++f) {
        bad[rng.UniformInt(bad.size())] ^= static_cast<char>(1 + rng.UniformInt(255));
      }
      const std::string context = std::string(file) + " trial " + std::to_string(trial);
      o.strict = trial % 2 == 1;
      o.try_recover_truncated = trial % 3 == 0;
      ExpectCleanOutcome(DecodeJpeg(bad, o), file, context);
      ExpectCleanOutcome(DecodeAndCropJpeg(bad, {3, 4, 9, 11}, o), file, context);
    }
  }
}

TEST(JpegCorruption, EmptyAndNotJpeg) {
  DecodeJpegOptions o;
  o.name = "empty.jpg";
  SLUICE_EXPECT_ERROR(DecodeJpeg("", o), StatusCode::kInvalidArgument, "empty.jpg: empty input");
  SLUICE_EXPECT_ERROR(ReadJpegHeader("", "empty.jpg"), StatusCode::kInvalidArgument, "empty");
  o.name = "";
  SLUICE_EXPECT_ERROR(DecodeJpeg("\x89PNG\r\n\x1a\n", o), StatusCode::kInvalidArgument,
                      "decode_jpeg: <8-byte input>: Not a JPEG file");
  // SOI, a quantization table, EOI: tables only, no image.
  std::string tables = "\xFF\xD8\xFF\xDB";
  tables += std::string("\x00\x43\x00", 3) + std::string(64, '\x01') + "\xFF\xD9";
  SLUICE_EXPECT_ERROR(DecodeJpeg(tables, o), StatusCode::kInvalidArgument, "no image");
}

TEST(JpegCorruption, GiantDimensionsAreRejectedBeforeAllocating) {
  DecodeJpegOptions o;
  o.name = "giant.jpg";
  const std::string giant = JpegClaiming(60000, 60000);
  SLUICE_EXPECT_ERROR(DecodeJpeg(giant, o), StatusCode::kResourceExhausted,
                      "giant.jpg: the image is 60000x60000, more than max_pixels (134217728)");
  SLUICE_EXPECT_ERROR(DecodeAndCropJpeg(giant, {0, 0, 10, 10}, o), StatusCode::kResourceExhausted,
                      "60000x60000");
  SLUICE_EXPECT_ERROR(JpegOutputShape(giant, o), StatusCode::kResourceExhausted, "max_pixels");
  SLUICE_ASSERT_OK_AND_ASSIGN(JpegHeader h, ReadJpegHeader(giant));
  EXPECT_EQ(h.width, 60000);
  // Past libjpeg's own limit of 65500 per side.
  SLUICE_EXPECT_ERROR(DecodeJpeg(JpegClaiming(65535, 2), o), StatusCode::kResourceExhausted,
                      "giant.jpg: Maximum supported image dimension is 65500 pixels");
  // Under the default limit but over a caller's: still refused.
  o.max_pixels = 37 * 23 - 1;
  SLUICE_EXPECT_ERROR(DecodeJpeg(CodecGolden::Read("rgb420_q90.jpg"), o),
                      StatusCode::kResourceExhausted, "37x23");
  // Zero height (a DNL-defined height, unsupported).
  SLUICE_EXPECT_ERROR(DecodeJpeg(JpegClaiming(37, 0), o), StatusCode::kInvalidArgument,
                      "Empty JPEG image");
}

TEST(JpegCorruption, TwelveBitIsAClearError) {
  std::string jpeg = CodecGolden::Read("rgb420_q90.jpg");
  const size_t sof = FindJpegMarker(jpeg, 0xC0);
  ASSERT_NE(sof, std::string::npos);
  jpeg[sof + 1] = static_cast<char>(0xC1);  // extended sequential
  jpeg[sof + 4] = 12;                       // sample precision
  DecodeJpegOptions o;
  o.name = "scan_12bit.jpg";
  SLUICE_EXPECT_ERROR(DecodeJpeg(jpeg, o), StatusCode::kInvalidArgument,
                      "decode_jpeg: scan_12bit.jpg: Unsupported JPEG data precision 12 (only "
                      "8-bit JPEG is supported; 12-bit is not)");
  SLUICE_EXPECT_ERROR(ReadJpegHeader(jpeg, "scan_12bit.jpg"), StatusCode::kInvalidArgument,
                      "precision 12");
}

TEST(JpegCorruption, StrictRejectsWhatLenientRecovers) {
  const std::string jpeg = CodecGolden::Read("big420_q85.jpg");
  DecodeJpegOptions lenient, strict;
  lenient.name = strict.name = "x.jpg";
  strict.strict = true;
  // Junk before EOI: "extraneous bytes before marker".
  std::string junk = jpeg.substr(0, jpeg.size() - 2) + "abc" + jpeg.substr(jpeg.size() - 2);
  SLUICE_EXPECT_OK(DecodeJpeg(junk, lenient));
  SLUICE_EXPECT_ERROR(DecodeJpeg(junk, strict), StatusCode::kInvalidArgument,
                      "x.jpg: Corrupt JPEG data: 2 extraneous bytes before marker 0xd9");
  // Trailing bytes after EOI are never read.
  SLUICE_EXPECT_OK(DecodeJpeg(jpeg + "trailing garbage", strict));
  // A missing EOI: libjpeg's bit reader wants bytes that are not there, so
  // this is truncated data (TF fails too), unless recovering.
  const std::string no_eoi = jpeg.substr(0, jpeg.size() - 2);
  SLUICE_EXPECT_ERROR(DecodeJpeg(no_eoi, lenient), StatusCode::kInvalidArgument, "truncated");
  lenient.try_recover_truncated = strict.try_recover_truncated = true;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, DecodeJpeg(no_eoi, lenient));
  EXPECT_TRUE(Identical(a, DecodeJpeg(jpeg).value()));
  SLUICE_EXPECT_ERROR(DecodeJpeg(no_eoi, strict), StatusCode::kInvalidArgument,
                      "x.jpg: Premature end of JPEG file");
  // Cut inside the scan: with recovery, lenient decodes and strict refuses.
  const std::string cut = jpeg.substr(0, jpeg.size() * 3 / 4);
  SLUICE_EXPECT_OK(DecodeJpeg(cut, lenient));
  SLUICE_EXPECT_ERROR(DecodeJpeg(cut, strict), StatusCode::kInvalidArgument, "x.jpg");
}

TEST(JpegCorruption, TooManyProgressiveScans) {
  // The last scan of a progressive file, repeated 600 times: libjpeg warns
  // about the bogus progression but would go on; the scan limit stops it.
  const std::string jpeg = CodecGolden::Read("rgb420_prog.jpg");
  const size_t last_sos = jpeg.rfind("\xFF\xDA");
  ASSERT_NE(last_sos, std::string::npos);
  const std::string scan = jpeg.substr(last_sos, jpeg.size() - 2 - last_sos);
  std::string many = jpeg.substr(0, jpeg.size() - 2);
  for (int i = 0; i < 600; ++i) many += scan;
  many += "\xFF\xD9";
  DecodeJpegOptions o;
  o.name = "scans.jpg";
  SLUICE_EXPECT_ERROR(DecodeJpeg(many, o), StatusCode::kInvalidArgument,
                      "scans.jpg: too many progressive scans");
}

TEST(JpegCorruption, BadOptions) {
  const std::string jpeg = CodecGolden::Read("rgb420_q90.jpg");
  DecodeJpegOptions o;
  o.name = "opt.jpg";
  o.channels = 4;
  SLUICE_EXPECT_ERROR(DecodeJpeg(jpeg, o), StatusCode::kInvalidArgument,
                      "opt.jpg: channels must be 0, 1 or 3, got 4");
  o.channels = 0;
  o.ratio = 3;
  SLUICE_EXPECT_ERROR(DecodeJpeg(jpeg, o), StatusCode::kInvalidArgument, "ratio");
  o.ratio = 1;
  o.acceptable_fraction = 1.5f;
  SLUICE_EXPECT_ERROR(DecodeJpeg(jpeg, o), StatusCode::kInvalidArgument, "acceptable_fraction");
  o.acceptable_fraction = 1;
  o.max_pixels = 0;
  SLUICE_EXPECT_ERROR(DecodeJpeg(jpeg, o), StatusCode::kInvalidArgument, "max_pixels");
  o.max_pixels = kDefaultMaxImagePixels;
  o.min_width = -1;
  SLUICE_EXPECT_ERROR(DecodeJpeg(jpeg, o), StatusCode::kInvalidArgument, "min_width");
}

TEST(JpegCorruption, CmykToGrayIsLumaOfTheRgbDecode) {
  // TF refuses channels=1 for CMYK; sluice converts, with libjpeg's luma.
  for (const char* file : {"cmyk_adobe.jpg", "cmyk_plain.jpg", "ycck_adobe.jpg"}) {
    const std::string jpeg = CodecGolden::Read(file);
    DecodeJpegOptions o;
    o.channels = 3;
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor rgb, DecodeJpeg(jpeg, o));
    o.channels = 1;
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor gray, DecodeJpeg(jpeg, o));
    ASSERT_EQ(gray.shape(), (Shape{16, 24, 1}));
    for (int64_t i = 0; i < gray.num_elements(); ++i) {
      const uint8_t* p = &rgb.flat<uint8_t>()[i * 3];
      EXPECT_EQ(gray.flat<uint8_t>()[i], (19595 * p[0] + 38470 * p[1] + 7471 * p[2] + 32768) >> 16);
    }
  }
}

TEST(DecodeImageCorruption, MixedGarbage) {
  Rng rng(3);
  const std::string jpeg = CodecGolden::Read("rgb420_q90.jpg");
  const std::string png = CodecGolden::Read("pal8.png");
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = trial % 2 ? jpeg : png;
    bad.resize(rng.UniformInt(bad.size() + 1));
    if (!bad.empty()) bad[rng.UniformInt(bad.size())] ^= 0x5A;
    DecodeImageOptions o;
    o.name = "mixed.bin";
    ExpectCleanOutcome(DecodeImage(bad, o), "mixed.bin", std::to_string(trial));
  }
}

}  // namespace
}  // namespace sluice::ops
