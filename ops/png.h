// PNG codec on libspng, with tf.io.decode_png / tf.io.encode_png semantics.
//
// Decoding handles every PNG color type and bit depth (palette, gray with
// 1-16 bits, gray+alpha, RGB(A), tRNS transparency, Adam7 interlacing) and
// converts to the requested channels and depth exactly as TensorFlow does
// (it uses libpng's transformations; see docs/ops.md, "Codecs"). Images are
// tensors [height, width, channels]: uint8 for 8-bit samples; for 16-bit
// samples int32 holding 0..65535, because sluice has no uint16 dtype.
//
// Ownership: `bytes` is read only during the call; results own their memory;
// DecodePngInto() leaves its output unspecified on error.
// Errors: corrupt or truncated data and bad options are InvalidArgument; an
// image over `max_pixels` (checked from the header before allocating) is
// ResourceExhausted. Ancillary chunks past an 8 MiB cache are skipped.
// Messages name the op and `name`.
// Thread-safety: all functions may run concurrently (no shared state).
#ifndef SLUICE_OPS_PNG_H_
#define SLUICE_OPS_PNG_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/image_limits.h"

namespace sluice::ops {

struct DecodePngOptions {
  // 0: as stored (gray 1, gray+alpha 2, RGB 3, RGBA 4; palette 3, or 4 with
  // a tRNS chunk), or 1, 3, 4. Missing alpha is opaque; alpha not asked for
  // is dropped; color to gray uses libpng's 0.299/0.587/0.114 weights.
  int channels = 0;
  // 8: uint8 output (16-bit samples keep their high byte, as TF does).
  // 16: int32 output in 0..65535 (8-bit samples are scaled by 257), TF's
  // dtype=tf.uint16.
  int bits = 8;
  // Largest width x height accepted.
  int64_t max_pixels = kDefaultMaxImagePixels;
  // For error messages. Not copied.
  std::string_view name;
};

enum class PngColorType { kGray = 0, kRGB = 2, kPalette = 3, kGrayAlpha = 4, kRGBA = 6 };

struct PngHeader {
  int64_t width = 0;
  int64_t height = 0;
  PngColorType color_type = PngColorType::kGray;
  int bit_depth = 8;  // per sample (palette: per index): 1, 2, 4, 8 or 16
  int channels = 0;   // what DecodePng returns with channels = 0
  bool interlaced = false;
  bool has_trns = false;  // a tRNS chunk (transparency) is present
};

// Parses the signature, IHDR and the chunks before the image data.
Result<PngHeader> ReadPngHeader(std::string_view bytes, std::string_view name = {});

// [height, width, channels] that DecodePng() returns (header only).
Result<Shape> PngOutputShape(std::string_view bytes, const DecodePngOptions& options = {});

Result<Tensor> DecodePng(std::string_view bytes, const DecodePngOptions& options = {});
// As DecodePng(), into `*out`, which must have PngOutputShape() and dtype
// uint8 (bits 8) or int32 (bits 16). REQUIRES: out != nullptr.
Status DecodePngInto(std::string_view bytes, const DecodePngOptions& options, Tensor* out);

struct EncodePngOptions {
  // zlib level 0 (none) to 9 (smallest); -1 is zlib's default (6), as TF.
  int compression = -1;
};

// A non-interlaced PNG of `image` [height, width, 1..4] (gray, gray+alpha,
// RGB, RGBA): uint8 gives 8-bit samples, int32 (values 0..65535) 16-bit.
// InvalidArgument for other dtypes, ranks, channel counts, out-of-range
// samples or an empty image.
Result<std::string> EncodePng(const Tensor& image, const EncodePngOptions& options = {});

}  // namespace sluice::ops

#endif  // SLUICE_OPS_PNG_H_
