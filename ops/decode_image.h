// DecodeImage: decodes JPEG or PNG, chosen by the leading magic bytes, like
// tf.io.decode_image (without GIF, BMP and WebP, which are recognized only
// to name them in the error). Also DetectImageFormat.
//
// Output: uint8 [height, width, channels]. JPEG decodes with DecodeJpeg's
// defaults (TF's), PNG with DecodePng's (16-bit samples keep their high
// byte). Ownership and errors as for jpeg.h and png.h; thread-safe.
#ifndef SLUICE_OPS_DECODE_IMAGE_H_
#define SLUICE_OPS_DECODE_IMAGE_H_

#include <cstdint>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/image_limits.h"

namespace sluice::ops {

enum class ImageFormat { kUnknown, kJpeg, kPng, kGif, kBmp, kWebp };

// From the first bytes only: JPEG FF D8 FF, PNG's 8-byte signature, "GIF8",
// "BM", "RIFF....WEBP". kUnknown for anything else, including empty input.
ImageFormat DetectImageFormat(std::string_view bytes);
// "JPEG", "PNG", "GIF", "BMP", "WebP" or "unknown".
std::string_view ImageFormatName(ImageFormat format);

struct DecodeImageOptions {
  // 0 (as stored), 1 or 3; 4 for PNG only (InvalidArgument for JPEG, as TF).
  int channels = 0;
  int64_t max_pixels = kDefaultMaxImagePixels;
  // JPEG only, as DecodeJpegOptions: strict refuses what libjpeg would
  // paper over (its warnings, any truncation, a header claiming more
  // blocks than the bytes can hold); allow_harmless_warnings then still
  // accepts the warnings that make nothing up. Both true is what
  // AddJpegRestartMarkers accepts, and what `sluice convert images --check
  // full` uses. No effect on PNG, which has no lenient mode (image data cut
  // short and bad CRCs in critical chunks are errors either way).
  bool strict = false;
  bool allow_harmless_warnings = false;
  std::string_view name;  // for error messages; not copied
};

// InvalidArgument "unsupported image format" naming the detected format
// (GIF, BMP, WebP, unknown), else whatever the JPEG or PNG decoder returns.
Result<Tensor> DecodeImage(std::string_view bytes, const DecodeImageOptions& options = {});

// The shape DecodeImage() returns (header only), and decoding into a
// preallocated uint8 tensor of that shape. REQUIRES: out != nullptr.
Result<Shape> ImageOutputShape(std::string_view bytes, const DecodeImageOptions& options = {});
Status DecodeImageInto(std::string_view bytes, const DecodeImageOptions& options, Tensor* out);

}  // namespace sluice::ops

#endif  // SLUICE_OPS_DECODE_IMAGE_H_
