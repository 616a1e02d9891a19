// JPEG codec: header inspection, decoding (whole, DCT-scaled, cropped) and
// encoding, with tf.io.decode_jpeg / tf.image.decode_and_crop_jpeg /
// tf.io.encode_jpeg semantics. Images are uint8 tensors [height, width,
// channels]. With the same options, decoded pixels equal TensorFlow's and
// encoded bytes equal tf.io.encode_jpeg's (checked against golden files; see
// docs/ops.md, "Codecs", for the few documented differences).
//
// Ownership: `bytes` is read only during the call. Returned tensors own their
// memory; the *Into() forms write into a tensor the caller allocated (for
// example a row of a batch), after checking its dtype and shape; on error
// its contents are unspecified.
//
// Errors: corrupt, truncated or unsupported data and bad options are
// InvalidArgument; an image over `max_pixels` (checked from the header,
// before any allocation) is ResourceExhausted. Every message names the op
// and `name` (or the input size when no name is given).
//
// Thread-safety: all functions may run concurrently on any threads. Each
// thread keeps one libjpeg decompressor, made on first use and freed when
// the thread exits.
#ifndef SLUICE_OPS_JPEG_H_
#define SLUICE_OPS_JPEG_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/image_limits.h"

namespace sluice::ops {

// tf's dct_method: "" and "INTEGER_FAST" are kIntegerFast (TF's default),
// "INTEGER_ACCURATE" is kIntegerAccurate.
enum class JpegDctMethod { kIntegerFast, kIntegerAccurate };

struct DecodeJpegOptions {
  // 0: as stored (1 for grayscale, else 3: CMYK and YCCK become RGB), 1, 3.
  int channels = 0;
  JpegDctMethod dct_method = JpegDctMethod::kIntegerFast;
  // Scale in the DCT domain: output dims are ceil(dim / ratio). 1, 2, 4, 8.
  int ratio = 1;
  // If either is > 0 (ratio must then be 1): the smallest scale among 1/8,
  // 1/4, 1/2 and 1 whose output is still >= min_width x min_height; the full
  // size if even that is smaller. See JpegScaleDenominator().
  int64_t min_width = 0;
  int64_t min_height = 0;
  // Smooth (triangle) chroma upsampling, as TF's fancy_upscaling.
  bool fancy_upscaling = true;
  // Truncated data: false fails (unless acceptable_fraction allows a
  // partial image, whose missing rows are zero); true decodes what is there
  // and lets libjpeg make up the rest (gray), like TF.
  bool try_recover_truncated = false;
  // Smallest fraction of rows that must decode when data is missing.
  float acceptable_fraction = 1.0f;
  // false (TF's behavior): libjpeg's warnings about recoverable corruption
  // (bad Huffman codes, extraneous bytes before a marker) are ignored and
  // the image decodes. true: the first such warning, and any truncation,
  // is an InvalidArgument, and so is a header that claims more 8x8 blocks
  // than the data can hold (at least one bit each; checked before anything
  // image-sized is allocated, with AddJpegRestartMarkers' message).
  bool strict = false;
  // With strict: the warnings that leave no pixel made up (bytes between
  // markers that belong to no segment, an unknown JFIF version or Adobe
  // transform, a malformed ICC marker) are accepted, as
  // AddJpegRestartMarkers accepts them; the rest of strict stays. No effect
  // without strict.
  bool allow_harmless_warnings = false;
  // Largest width x height of the stored image accepted.
  int64_t max_pixels = kDefaultMaxImagePixels;
  // For error messages (a file name, a record key). Not copied.
  std::string_view name;
};

enum class JpegColorSpace { kUnknown, kGrayscale, kYCbCr, kRGB, kCMYK, kYCCK };
// Chroma subsampling of a 3-component image (kGray for grayscale; kOther
// for anything else, e.g. CMYK or exotic sampling factors).
enum class JpegSubsampling { kGray, k444, k422, k420, k440, k411, kOther };

struct JpegHeader {
  int64_t width = 0;
  int64_t height = 0;
  int components = 0;  // in the file: 1, 3 or 4
  JpegColorSpace color_space = JpegColorSpace::kUnknown;
  JpegSubsampling subsampling = JpegSubsampling::kOther;
  bool progressive = false;
  bool arithmetic = false;  // arithmetic-coded (decodable, but rare)
};

// Parses markers up to the first scan; decodes nothing, allocates nothing
// image-sized. InvalidArgument if the bytes are not a decodable 8-bit JPEG.
Result<JpegHeader> ReadJpegHeader(std::string_view bytes, std::string_view name = {});

// The denominator d in {1, 2, 4, 8} of the smallest scale 1/d with
// ceil(width/d) >= min_width and ceil(height/d) >= min_height (1 if none).
int JpegScaleDenominator(int64_t width, int64_t height, int64_t min_width, int64_t min_height);
// ceil(size / denominator): a dimension after DCT scaling.
int64_t JpegScaledSize(int64_t size, int denominator);

// The shape DecodeJpeg() returns, [height, width, channels], from the header
// alone (the "setup" half of DecodeJpegInto()).
Result<Shape> JpegOutputShape(std::string_view bytes, const DecodeJpegOptions& options = {});

Result<Tensor> DecodeJpeg(std::string_view bytes, const DecodeJpegOptions& options = {});
// As DecodeJpeg(), into `*out`. REQUIRES: out != nullptr. InvalidArgument
// unless *out is uint8 with exactly JpegOutputShape(bytes, options).
Status DecodeJpegInto(std::string_view bytes, const DecodeJpegOptions& options, Tensor* out);

// A window of the decoded image, in output coordinates: after DCT scaling
// (ratio or min_width/min_height), so a window of a 1/2-scale decode of a
// 640x480 image lies within 320x240.
struct JpegCropWindow {
  int64_t y = 0;
  int64_t x = 0;
  int64_t height = 0;
  int64_t width = 0;
};

// Exactly window's pixels of DecodeJpeg(bytes, options), decoding only the
// iMCU columns and rows the window needs (libjpeg's jpeg_crop_scanline and
// jpeg_skip_scanlines). Equal to cropping a full decode, also at the window
// borders with fancy upsampling (TF's decode_and_crop_jpeg can differ there
// by a few levels). InvalidArgument if the window is empty or outside the
// image.
Result<Tensor> DecodeAndCropJpeg(std::string_view bytes, const JpegCropWindow& window,
                                 const DecodeJpegOptions& options = {});
// As DecodeAndCropJpeg(), into `*out`: uint8 [window.height, window.width,
// channels]. REQUIRES: out != nullptr.
Status DecodeAndCropJpegInto(std::string_view bytes, const JpegCropWindow& window,
                             const DecodeJpegOptions& options, Tensor* out);

struct EncodeJpegOptions {
  int quality = 95;                 // 0..100, as tf.io.encode_jpeg
  bool chroma_downsampling = true;  // 4:2:0; false: 4:4:4
  bool progressive = false;
  bool optimize_size = false;  // optimal Huffman tables (slower)
  // > 0: a restart marker about every N MCUs (JpegRestartInterval makes the
  // segments tile the image), so that a crop decode reads only the segments
  // its window covers (DecodeAndCropJpeg). 0: none, like TF.
  int restart_interval = 0;
};

// The restart interval, in MCUs, used for a requested `wanted` (1..65535) on
// an image `mcus_per_row` MCUs wide, so that segments tile the image in
// rectangles: the largest divisor of mcus_per_row that is at most wanted (1
// at worst) or, if wanted >= mcus_per_row, the largest multiple of it (whole
// MCU rows per segment).
int JpegRestartInterval(int64_t mcus_per_row, int wanted);

// A JPEG of `image`: uint8 [height, width, 1 or 3] (3 is RGB). Written like
// tf.io.encode_jpeg with the same options (JFIF, 300 dpi, accurate DCT), so
// the bytes are identical. InvalidArgument for another dtype, rank or
// channel count, an empty image or a side over 65500.
Result<std::string> EncodeJpeg(const Tensor& image, const EncodeJpegOptions& options = {});

}  // namespace sluice::ops

#endif  // SLUICE_OPS_JPEG_H_
