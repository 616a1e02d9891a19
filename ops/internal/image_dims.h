// Shape checks and small helpers shared by the image kernels of ops/:
// reading [height, width, channels] / [batch, height, width, channels]
// shapes, checking dtypes and preallocated outputs. Internal; pure functions,
// thread-safe.
#ifndef SLUICE_OPS_INTERNAL_IMAGE_DIMS_H_
#define SLUICE_OPS_INTERNAL_IMAGE_DIMS_H_

#include <cstdint>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"

namespace sluice::ops_internal {

// The dimensions of an image or a batch of images. A single image has
// batch == 1 and batched == false.
struct ImageDims {
  int64_t batch = 1;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  bool batched = false;

  int64_t pixels_per_image() const { return height * width; }
  // The same layout (rank) with other spatial dims and channels.
  Shape WithSize(int64_t new_height, int64_t new_width, int64_t new_channels) const;
};

// Reads a rank-3 [H, W, C] or rank-4 [N, H, W, C] shape. InvalidArgument
// naming `op` and the shape for any other rank.
Result<ImageDims> GetImageDims(const Shape& shape, std::string_view op);

// InvalidArgument naming `op` unless `dtype` is a number type (bool counts
// as one only when `allow_bool`).
Status CheckNumeric(DType dtype, std::string_view op, bool allow_bool = true);

// Checks a caller-provided output: non-null, of `dtype` and `shape`, and not
// sharing bytes with `input`. InvalidArgument naming `op` otherwise.
Status CheckOutput(const Tensor& input, const Tensor* out, DType dtype, const Shape& shape,
                   std::string_view op);

// True if the byte ranges of the two tensors overlap.
bool Overlaps(const Tensor& a, const Tensor& b);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_IMAGE_DIMS_H_
