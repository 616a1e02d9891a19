// Resize: tf.image.resize (TensorFlow 2) for one image [height, width,
// channels] or a batch [batch, height, width, channels].
//
// Semantics are TensorFlow 2's, method by method: half-pixel centers;
// "nearest" picks floor((x + 0.5) * in / out) like resize_nearest_neighbor
// (half_pixel_centers=True); "bilinear" interpolates like resize_bilinear;
// "bicubic" uses Keys' cubic (a = -0.5) with TF's 1024-entry weight table and
// zero-weight, renormalized borders; "area" is resize_area; antialias=true
// (and the lanczos3/lanczos5/gaussian/mitchellcubic methods) follow
// scale_and_translate: the kernel is widened by in/out when downsampling.
// antialias is ignored by "nearest" and "area", as in TF. Results match TF to
// float rounding (see docs/ops.md for measured differences).
//
// Output dtype: float32 for every method except "nearest", which keeps the
// input's dtype (as TF). Values are not clamped (bicubic and lanczos may
// overshoot the input's range, as in TF).
//
// The returned tensor owns new bytes. ResizeInto() writes into a caller's
// tensor, which must not share bytes with the input. Computation is
// separable (horizontal and vertical 1-D passes with weights precomputed per
// output row and column), reads uint8 and other dtypes directly without
// converting the whole image, and uses no threads of its own.
// Thread-safe: no shared state.
#ifndef SLUICE_OPS_RESIZE_H_
#define SLUICE_OPS_RESIZE_H_

#include <cstdint>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/image_limits.h"

namespace sluice::ops {

// tf.image.ResizeMethod.
enum class ResizeMethod {
  kBilinear,
  kNearest,
  kBicubic,
  kArea,
  kLanczos3,
  kLanczos5,
  kGaussian,
  kMitchellCubic,
};

// "bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
// "gaussian", "mitchellcubic" (TF's names); "nearest_neighbor" is also
// accepted by ResizeMethodFromName. InvalidArgument for anything else.
std::string_view ResizeMethodName(ResizeMethod method);
Result<ResizeMethod> ResizeMethodFromName(std::string_view name);

// An output size in pixels.
struct ImageSize {
  int64_t height = 0;
  int64_t width = 0;
};

struct ResizeOptions {
  ResizeMethod method = ResizeMethod::kBilinear;
  // Low-pass filter when downsampling (TF's antialias). No effect on
  // kNearest and kArea.
  bool antialias = false;
  // Fit inside `size` keeping the aspect ratio: both sides are scaled by
  // min(size.height / height, size.width / width) and rounded half to even,
  // as TF. Not accepted by ResizeInto (the output's shape is the size).
  bool preserve_aspect_ratio = false;
  // Largest output height x width (of each image of a batch) that Resize
  // and ResizeOutputShape accept: more is ResourceExhausted, before
  // anything is allocated (the decoders' limit, image_limits.h; a float32
  // RGB output at the default is 1.5 GiB). ResizeInto writes into a tensor
  // the caller allocated and does not check it.
  int64_t max_pixels = kDefaultMaxImagePixels;
};

// float32, or `input` for kNearest.
DType ResizeOutputDType(DType input, ResizeMethod method);

// The shape Resize() returns for an image of shape `image`: same rank, the
// new height and width (after preserve_aspect_ratio). InvalidArgument for a
// rank other than 3 or 4, an empty image, zero channels, a size that is not
// positive, or dimensions beyond int32 (TF's limit); ResourceExhausted for
// an output over options.max_pixels.
Result<Shape> ResizeOutputShape(const Shape& image, ImageSize size,
                                const ResizeOptions& options = {});

// Resizes `image` (any numeric dtype; bool only with kNearest) to `size`.
Result<Tensor> Resize(const Tensor& image, ImageSize size, const ResizeOptions& options = {});

// As Resize(), into `*out`, whose shape gives the size: [N, h, w, C] or
// [h, w, C] with the image's rank, batch and channels, and whose dtype must
// be ResizeOutputDType(). REQUIRES: *out does not share bytes with `image`
// (checked: InvalidArgument).
Status ResizeInto(const Tensor& image, Tensor* out, const ResizeOptions& options = {});

}  // namespace sluice::ops

#endif  // SLUICE_OPS_RESIZE_H_
