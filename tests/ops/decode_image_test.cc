// DecodeImage and DetectImageFormat: dispatch by magic bytes, the same
// pixels as the format's own decoder, and clear errors for other formats.
#include "sluice/ops/decode_image.h"

#include <gtest/gtest.h>

#include <string>

#include "codec_golden.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/png.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using testing::CodecGolden;

TEST(DetectImageFormat, ByMagicBytes) {
  using namespace std::string_view_literals;
  EXPECT_EQ(DetectImageFormat(CodecGolden::Read("rgb420_q90.jpg")), ImageFormat::kJpeg);
  EXPECT_EQ(DetectImageFormat(CodecGolden::Read("pal8.png")), ImageFormat::kPng);
  EXPECT_EQ(DetectImageFormat("GIF89a\x01\x00"), ImageFormat::kGif);
  EXPECT_EQ(DetectImageFormat("GIF87a"), ImageFormat::kGif);
  EXPECT_EQ(DetectImageFormat("BM\x36\x00\x00\x00"), ImageFormat::kBmp);
  EXPECT_EQ(DetectImageFormat("RIFF\x10\x00\x00\x00WEBPVP8 "sv), ImageFormat::kWebp);
  EXPECT_EQ(DetectImageFormat("RIFF\x10\x00\x00\x00WAVEfmt "sv), ImageFormat::kUnknown);
  EXPECT_EQ(DetectImageFormat(""), ImageFormat::kUnknown);
  EXPECT_EQ(DetectImageFormat("\xFF\xD8"), ImageFormat::kUnknown);  // too short
  EXPECT_EQ(DetectImageFormat("\x89PNG\r\n\x1a"), ImageFormat::kUnknown);
  EXPECT_EQ(ImageFormatName(ImageFormat::kWebp), "WebP");
  EXPECT_EQ(ImageFormatName(ImageFormat::kUnknown), "unknown");
}

TEST(DecodeImage, SameAsTheFormatsOwnDecoder) {
  for (int channels : {0, 1, 3}) {
    DecodeImageOptions o;
    o.channels = channels;
    for (const char* file : {"rgb420_q90.jpg", "gray_q90.jpg", "cmyk_adobe.jpg"}) {
      const std::string bytes = CodecGolden::Read(file);
      DecodeJpegOptions j;
      j.channels = channels;
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, DecodeImage(bytes, o));
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, DecodeJpeg(bytes, j));
      EXPECT_TRUE(Identical(a, b)) << file << " channels " << channels;
    }
  }
  for (int channels : {0, 1, 3, 4}) {
    DecodeImageOptions o;
    o.channels = channels;
    for (const char* file : {"pal8_trns.png", "rgba16.png", "ga8.png", "gray1.png"}) {
      const std::string bytes = CodecGolden::Read(file);
      DecodePngOptions p;
      p.channels = channels;
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, DecodeImage(bytes, o));
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, DecodePng(bytes, p));
      EXPECT_TRUE(Identical(a, b)) << file << " channels " << channels;
      SLUICE_ASSERT_OK_AND_ASSIGN(Shape shape, ImageOutputShape(bytes, o));
      Tensor into = Tensor::Allocate(DType::kUInt8, shape).value();
      SLUICE_ASSERT_OK(DecodeImageInto(bytes, o, &into));
      EXPECT_TRUE(Identical(into, b));
    }
  }
}

TEST(DecodeImage, UnsupportedFormatsAreNamed) {
  using namespace std::string_view_literals;
  DecodeImageOptions o;
  o.name = "cat.gif";
  SLUICE_EXPECT_ERROR(DecodeImage("GIF89a...."sv, o), StatusCode::kInvalidArgument,
                      "decode_image: cat.gif: unsupported image format: GIF");
  o.name = "cat.bmp";
  SLUICE_EXPECT_ERROR(DecodeImage("BM......"sv, o), StatusCode::kInvalidArgument,
                      "unsupported image format: BMP");
  o.name = "cat.webp";
  SLUICE_EXPECT_ERROR(DecodeImage("RIFF\x10\x00\x00\x00WEBPVP8 "sv, o),
                      StatusCode::kInvalidArgument, "cat.webp: unsupported image format: WebP");
  o.name = "notes.txt";
  SLUICE_EXPECT_ERROR(DecodeImage("hello"sv, o), StatusCode::kInvalidArgument,
                      "notes.txt: unsupported image format: not JPEG or PNG");
  SLUICE_EXPECT_ERROR(DecodeImage(""sv, o), StatusCode::kInvalidArgument, "empty input");
  SLUICE_EXPECT_ERROR(ImageOutputShape("GIF89a"sv, o), StatusCode::kInvalidArgument, "GIF");
}

TEST(DecodeImage, ChannelRules) {
  DecodeImageOptions o;
  o.name = "a.jpg";
  o.channels = 4;  // like TF: PNG only
  SLUICE_EXPECT_ERROR(DecodeImage(CodecGolden::Read("rgb420_q90.jpg"), o),
                      StatusCode::kInvalidArgument, "a.jpg: JPEG does not support 4 channels");
  SLUICE_EXPECT_OK(DecodeImage(CodecGolden::Read("rgb8.png"), o));
  o.channels = 2;
  SLUICE_EXPECT_ERROR(DecodeImage(CodecGolden::Read("rgb8.png"), o), StatusCode::kInvalidArgument,
                      "channels must be 0, 1, 3 or 4");
  // Decoder errors keep the name.
  o.channels = 0;
  o.name = "broken.png";
  SLUICE_EXPECT_ERROR(DecodeImage(CodecGolden::Read("rgb8.png").substr(0, 40), o),
                      StatusCode::kInvalidArgument, "decode_png: broken.png");
}

}  // namespace
}  // namespace sluice::ops
