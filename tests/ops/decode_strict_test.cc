// Strict decoding (DecodeImageOptions::strict with allow_harmless_warnings,
// what `sluice convert images --check full` uses) on the two hostile JPEGs
// of issue 37 that TensorFlow's lenient decode accepts: one cut in half with
// an EOI appended, and one whose SOF claims 11000x11000. Also the output
// limit of Resize.
#include <gtest/gtest.h>

#include <string>

#include "codec_golden.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"
#include "sluice/ops/resize.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using testing::CodecGolden;

// big420_q85.jpg (1768 bytes, the size of the review's file) with its SOF0
// claiming width x height.
std::string BigClaiming(int width, int height) {
  return testing::JpegClaiming(width, height, "big420_q85.jpg");
}

// The first half of a JPEG and an EOI: no bytes are missing as far as
// libjpeg's source knows, but the scan ends early.
std::string CutInHalfWithEoi(const std::string& jpeg) {
  return jpeg.substr(0, jpeg.size() / 2) + "\xFF\xD9";
}

DecodeImageOptions Checked(std::string_view name) {
  DecodeImageOptions o;
  o.strict = o.allow_harmless_warnings = true;
  o.name = name;
  return o;
}

TEST(StrictDecode, CutInHalfWithEoiIsRefused) {
  const std::string jpeg = CodecGolden::Read("big420_q85.jpg");
  const std::string cut = CutInHalfWithEoi(jpeg);
  // TF's behavior stays the default: libjpeg fills the rest in, and the
  // image "decodes".
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor lenient, DecodeImage(cut));
  EXPECT_EQ(lenient.shape(), DecodeImage(jpeg).value().shape());
  // Strict: libjpeg's warning is the error, as in the transcoder.
  SLUICE_EXPECT_ERROR(DecodeImage(cut, Checked("cut.jpg")), StatusCode::kInvalidArgument,
                      "decode_jpeg: cut.jpg: Corrupt JPEG data: premature end of data segment");
  DecodeJpegOptions j;
  j.strict = j.allow_harmless_warnings = true;
  EXPECT_FALSE(DecodeJpeg(cut, j).ok());
  JpegRestartOptions r;
  r.name = "cut.jpg";
  SLUICE_EXPECT_ERROR(AddJpegRestartMarkers(cut, r), StatusCode::kInvalidArgument,
                      "premature end of data segment");
}

TEST(StrictDecode, HeaderClaimingMoreThanTheBytesHoldIsRefusedBeforeDecoding) {
  const std::string giant = BigClaiming(11000, 11000);
  ASSERT_EQ(giant.size(), 1768u);
  const std::string message =
      "the header claims a 11000x11000 image, more than 1768 bytes can hold (truncated or "
      "corrupt)";
  // From the header alone: the shape is refused, so nothing is allocated.
  SLUICE_EXPECT_ERROR(ImageOutputShape(giant, Checked("giant.jpg")), StatusCode::kInvalidArgument,
                      "jpeg_output_shape: giant.jpg: " + message);
  SLUICE_EXPECT_ERROR(DecodeImage(giant, Checked("giant.jpg")), StatusCode::kInvalidArgument,
                      "decode_jpeg: giant.jpg: " + message);
  // The strict JPEG decoder, with or without harmless warnings, and the
  // transcoder say the same.
  DecodeJpegOptions strict;
  strict.strict = true;
  SLUICE_EXPECT_ERROR(DecodeJpeg(giant, strict), StatusCode::kInvalidArgument, message);
  SLUICE_EXPECT_ERROR(AddJpegRestartMarkers(giant), StatusCode::kInvalidArgument, message);
  // The lenient header check still gives TF's shape (TF decodes the file),
  // and a smaller lie of the same kind still decodes leniently (made-up
  // gray rows), strictly not.
  SLUICE_ASSERT_OK_AND_ASSIGN(Shape shape, ImageOutputShape(giant));
  EXPECT_EQ(shape, (Shape{11000, 11000, 3}));
  const std::string lie = BigClaiming(2000, 1500);  // 70,500 blocks in 14,144 bits
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor made_up, DecodeImage(lie));
  EXPECT_EQ(made_up.shape(), (Shape{1500, 2000, 3}));
  SLUICE_EXPECT_ERROR(DecodeImage(lie, Checked("lie.jpg")), StatusCode::kInvalidArgument,
                      "the header claims a 2000x1500 image, more than 1768 bytes can hold");
  // A lie the bytes could hold (7,200 blocks) is caught while decoding, by
  // libjpeg's warning.
  const std::string small_lie = BigClaiming(640, 480);
  SLUICE_EXPECT_OK(DecodeImage(small_lie));
  SLUICE_EXPECT_ERROR(DecodeImage(small_lie, Checked("lie.jpg")), StatusCode::kInvalidArgument,
                      "decode_jpeg: lie.jpg: Corrupt JPEG data: premature end of data segment");
}

TEST(StrictDecode, HarmlessOdditiesPassOnlyWithAllowHarmlessWarnings) {
  // Bytes between the scan and EOI ("extraneous bytes before marker")
  // change no pixel: accepted by the transcoder and by --check full's
  // decode; DecodeJpegOptions::strict alone still refuses them.
  const std::string jpeg = CodecGolden::Read("big420_q85.jpg");
  const std::string junk = jpeg.substr(0, jpeg.size() - 2) + "abc" + jpeg.substr(jpeg.size() - 2);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor checked, DecodeImage(junk, Checked("junk.jpg")));
  EXPECT_TRUE(Identical(checked, DecodeImage(jpeg).value()));
  SLUICE_EXPECT_OK(AddJpegRestartMarkers(junk));
  DecodeImageOptions every_warning;
  every_warning.strict = true;
  SLUICE_EXPECT_ERROR(DecodeImage(junk, every_warning), StatusCode::kInvalidArgument,
                      "extraneous bytes before marker 0xd9");
  // Real files decode the same strictly as leniently.
  for (const char* name : {"big420_q85.jpg", "rgb420_prog.jpg", "gray_q90.jpg", "cmyk_adobe.jpg",
                           "rgb444_q90.jpg", "rgba8.png", "rgb16.png"}) {
    const std::string bytes = CodecGolden::Read(name);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor strict, DecodeImage(bytes, Checked(name)));
    EXPECT_TRUE(Identical(strict, DecodeImage(bytes).value())) << name;
  }
}

TEST(ResizeLimit, AnOutputOverMaxPixelsIsRefusedBeforeAllocating) {
  const Tensor one = Tensor::Allocate(DType::kUInt8, Shape{1, 1, 3}).value();
  // --resize 60000x60000 of the review: 3.6 billion pixels, 43 GB as float.
  SLUICE_EXPECT_ERROR(Resize(one, {60000, 60000}), StatusCode::kResourceExhausted,
                      "Resize: the output [60000, 60000] has 3600000000 pixels, more than "
                      "max_pixels (134217728)");
  SLUICE_EXPECT_ERROR(ResizeOutputShape(one.shape(), {60000, 60000}),
                      StatusCode::kResourceExhausted, "max_pixels");
  // Per image of a batch; with preserve_aspect_ratio, after fitting.
  SLUICE_EXPECT_ERROR(ResizeOutputShape(Shape{2, 10, 10, 3}, {20000, 20000}),
                      StatusCode::kResourceExhausted, "[20000, 20000]");
  SLUICE_ASSERT_OK_AND_ASSIGN(Shape fitted, ResizeOutputShape(Shape{1, 100, 3}, {60000, 60000},
                                                              {.preserve_aspect_ratio = true}));
  EXPECT_EQ(fitted, (Shape{600, 60000, 3}));
  // At the limit, and above it when raised.
  SLUICE_EXPECT_OK(ResizeOutputShape(one.shape(), {8192, 16384}));
  SLUICE_EXPECT_ERROR(ResizeOutputShape(one.shape(), {8192, 16385}), StatusCode::kResourceExhausted,
                      "max_pixels");
  SLUICE_EXPECT_OK(
      ResizeOutputShape(one.shape(), {60000, 60000}, {.max_pixels = int64_t{1} << 32}));
  SLUICE_EXPECT_ERROR(ResizeOutputShape(one.shape(), {2, 2}, {.max_pixels = 0}),
                      StatusCode::kInvalidArgument, "max_pixels must be > 0");
}

}  // namespace
}  // namespace sluice::ops
