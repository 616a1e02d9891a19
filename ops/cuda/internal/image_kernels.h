// The element loops behind ops/cuda/image_ops.h, compiled by nvcc from
// image_kernels.cu and cast_kernels.cu: each runs as a CUDA kernel on a
// stream or, for the host backend ("cpu:0"), as a plain loop on the calling
// thread. One __host__ __device__ function per output element serves both,
// so the host backend's tests exercise the arithmetic the GPU runs.
//
// This header is shared by C++20 (g++) and CUDA C++17 (nvcc) code: plain
// structs, no CUDA headers and of sluice only device/cuda/kernel_types.h. Arguments are validated by
// image_ops.cc; the loops trust them. Internal; no state (thread-safe).
#ifndef SLUICE_OPS_CUDA_INTERNAL_IMAGE_KERNELS_H_
#define SLUICE_OPS_CUDA_INTERNAL_IMAGE_KERNELS_H_

#include <cstdint>

#include "sluice/device/cuda/kernel_types.h"

namespace sluice::gpu_internal {

// A dense [batch, height, width, channels] block of elements.
struct ImageGeometry {
  int64_t batch = 1;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
};

// Every function returns a cudaError_t value: 0 (cudaSuccess), or the
// launch error. Host runs always return 0.

// out[b, y, x, c] = in[b, y0 + y, x0 + x, c] for the window's height and
// width; `elem_size` is 1, 2, 4 or 8 bytes.
struct CropArgs {
  const void* in = nullptr;
  void* out = nullptr;
  int elem_size = 1;
  ImageGeometry in_geometry;
  int64_t y0 = 0, x0 = 0, height = 0, width = 0;
};
int RunCrop(const CropArgs& args, KernelTarget target);

// Images of one flip call; a batch with more is done in several calls.
constexpr int64_t kMaxFlipImages = 2048;

// out = in with image b mirrored (left-right, or up-down) where bit b of
// `flip` is set, copied unchanged where it is not.
struct FlipArgs {
  const void* in = nullptr;
  void* out = nullptr;
  int elem_size = 1;
  ImageGeometry geometry;  // batch <= kMaxFlipImages
  bool up_down = false;
  uint32_t flip[kMaxFlipImages / 32] = {};
};
int RunFlip(const FlipArgs& args, KernelTarget target);

// tf.image.resize (half-pixel centers) to out_height x out_width: kNearest
// gathers elements of `type` (any), kBilinear writes float32 (not bool).
// scale_y and scale_x are in / out sizes computed in float on the host, as
// ops/ does.
struct ResizeArgs {
  enum class Method : uint8_t { kNearest, kBilinear };
  const void* in = nullptr;
  void* out = nullptr;
  ElemType type = ElemType::kUInt8;
  Method method = Method::kBilinear;
  ImageGeometry in_geometry;
  int64_t out_height = 0, out_width = 0;
  float scale_y = 1.0f, scale_x = 1.0f;
};
int RunResize(const ResizeArgs& args, KernelTarget target);

// Images of one CropResizeBatch launch (their parameters travel as the
// kernel's argument, ~10 KB); a larger batch is done in several launches.
constexpr int64_t kMaxCropResizeImages = 256;

// One image of a CropResizeBatch: uint8 [height, width, 3] at `in` (only
// its width matters: a row is width * 3 bytes), the crop window, the
// bilinear scales (crop / output size, computed in float on the host as
// ops/ does) and whether to mirror the result left-right.
struct CropResizeImage {
  const uint8_t* in = nullptr;
  int32_t width = 0;
  int32_t y0 = 0, x0 = 0, crop_height = 0, crop_width = 0;
  float scale_y = 1.0f, scale_x = 1.0f;
  int32_t flip = 0;
};

// The fused random-resized-crop recipe for images [first, first + count) of
// a float32 (or, bf16, bfloat16) [N, out_height, out_width, 3] batch at
// `out` (row b of the batch is image[b - first]): each image's window
// resized bilinearly (half-pixel centers, RunResize's taps and roundings),
// mirrored where `flip` is set, then (normalize) (v - mean[c]) / stddev[c],
// stored as float32 or rounded to bfloat16 (nearest even). In float32 bit
// for bit the chain RunCrop, RunResize, RunFlip, RunNormalize. One thread
// per output pixel (three channels), no intermediate buffers.
struct CropResizeBatchArgs {
  void* out = nullptr;
  bool bf16 = false;
  int64_t first = 0, count = 0;  // count <= kMaxCropResizeImages
  int64_t out_height = 0, out_width = 0;
  bool normalize = false;
  float mean[3] = {}, stddev[3] = {};
  CropResizeImage image[kMaxCropResizeImages];
};
int RunCropResizeBatch(const CropResizeBatchArgs& args, KernelTarget target);

constexpr int64_t kMaxNormalizeChannels = 64;

// out[i] = (float(in[i]) - mean[c]) / stddev[c], c = i % channels.
struct NormalizeArgs {
  const void* in = nullptr;
  float* out = nullptr;
  ElemType type = ElemType::kUInt8;
  int64_t count = 0;
  int64_t channels = 1;  // <= kMaxNormalizeChannels
  float mean[kMaxNormalizeChannels] = {};
  float stddev[kMaxNormalizeChannels] = {};
};
int RunNormalize(const NormalizeArgs& args, KernelTarget target);

// out[i] = in[i] converted as ops::Cast converts (truncation, x86-64's
// results for out-of-range floats, wrapping integers, round-to-nearest-even
// 16-bit floats). REQUIRES: from != to.
struct CastArgs {
  const void* in = nullptr;
  void* out = nullptr;
  ElemType from = ElemType::kUInt8;
  ElemType to = ElemType::kFloat32;
  int64_t count = 0;
};
int RunCast(const CastArgs& args, KernelTarget target);

}  // namespace sluice::gpu_internal

#endif  // SLUICE_OPS_CUDA_INTERNAL_IMAGE_KERNELS_H_
