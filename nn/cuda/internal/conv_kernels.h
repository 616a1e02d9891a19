// The element loops of the GPU backend's convolutions and poolings
// (conv.cc, pool.cc, cudnn_lib.cc), compiled by nvcc from conv_kernels.cu
// and pool_kernels.cu: __host__ __device__ functions per output element (or
// per pooling window and run of channels), run as a CUDA kernel or, on the
// host device, as a loop (device/cuda/kernel_util.cuh).
//
// Plain C++17 shared by g++ and nvcc: no sluice or CUDA headers. Arguments
// are checked by the callers (nn/kit/conv_checks.h); the loops trust
// them. Layouts: images NHWC, filters HWIO [kh, kw, in, out] unless a
// function says KRSC ([out, kh, kw, in], cuDNN's NHWC filter format).
// Sums are float32, accumulated in the order each function states, one
// rounding per step (no FMA). Each Run* returns the launch's cudaError_t
// (0 on the host). Internal; no state (thread-safe).
#ifndef SLUICE_NN_CUDA_INTERNAL_CONV_KERNELS_H_
#define SLUICE_NN_CUDA_INTERNAL_CONV_KERNELS_H_

#include <cstdint>

#include "sluice/device/cuda/kernel_types.h"

namespace sluice::gpu_backend_internal {

using gpu_internal::KernelTarget;

// nn::kit::ConvGeometry's fields (conv_checks.h): output (oh, ow)
// reads input rows oh · stride_h - pad_top + [0, kernel_h), columns
// ow · stride_w - pad_left + [0, kernel_w); taps outside the input are
// padding (zero for convolutions, skipped by pooling).
struct WindowGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

// The kernels' copy of a geometry with these fields (nn::kit::ConvGeometry).
template <typename G>
WindowGeometry ToWindowGeometry(const G& g) {
  return WindowGeometry{g.batch,    g.in_h,    g.in_w,     g.in_c,     g.out_h,
                        g.out_w,    g.out_c,   g.kernel_h, g.kernel_w, g.stride_h,
                        g.stride_w, g.pad_top, g.pad_left};
}

// y[n, oh, ow, o] = Σ over kh, kw, then c (that order) of
// x[n, ih, iw, c] · filter[kh, kw, c, o], then + bias[o] when bias is
// non-null.
struct Conv2DForwardArgs {
  WindowGeometry g;
  const float* x = nullptr;
  const float* filter = nullptr;
  const float* bias = nullptr;  // optional, [out_c]
  float* y = nullptr;
};
int RunConv2DForward(const Conv2DForwardArgs& args, KernelTarget target);

// dx[n, ih, iw, c] = Σ over the taps (kh, then kw) whose output position
// is inside dy, then o, of dy[n, oh, ow, o] · filter[kh, kw, c, o].
struct Conv2DBackwardDataArgs {
  WindowGeometry g;
  const float* dy = nullptr;
  const float* filter = nullptr;
  float* dx = nullptr;
};
int RunConv2DBackwardData(const Conv2DBackwardDataArgs& args, KernelTarget target);

// dfilter[kh, kw, c, o] = Σ over n, oh, ow (that order) of
// x[n, ih, iw, c] · dy[n, oh, ow, o] (taps in the padding add nothing);
// overwritten; zero for an empty batch. (The bias gradient is BiasGrad's.)
struct Conv2DBackwardFilterArgs {
  WindowGeometry g;
  const float* x = nullptr;
  const float* dy = nullptr;
  float* dfilter = nullptr;
};
int RunConv2DBackwardFilter(const Conv2DBackwardFilterArgs& args, KernelTarget target);

// An NHWC image x [batch, h, w, c] and the same image with its padding
// written out: padded [batch, padded_h, padded_w, c], x at (pad_top,
// pad_left), zeros around it. Pad writes padded from x; Crop writes x from
// padded's interior (a gradient computed over the padded image). Elements
// of elem_size bytes (2 or 4: bfloat16 or float32) are moved, not
// converted; zero is all zero bits in both.
struct PadNhwcArgs {
  int64_t batch = 0, h = 0, w = 0, c = 0;
  int64_t padded_h = 0, padded_w = 0, pad_top = 0, pad_left = 0;
  int elem_size = 4;
  const void* src = nullptr;
  void* dst = nullptr;
};
int RunPadNhwc(const PadNhwcArgs& args, KernelTarget target);
int RunCropNhwc(const PadNhwcArgs& args, KernelTarget target);

// A filter between HWIO [kh, kw, in, out] and KRSC [out, kh, kw, in]
// (to_krsc picks the direction); a pure permutation. in and out are float
// or, when in_bf16 / out_bf16, bfloat16 bits (bfloat16 to float is exact;
// float to bfloat16 rounds to nearest even).
struct FilterTransposeArgs {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t kernel_h = 1, kernel_w = 1, in_c = 0, out_c = 0;
  bool to_krsc = true;
  bool in_bf16 = false;
  bool out_bf16 = false;
};
int RunFilterTranspose(const FilterTransposeArgs& args, KernelTarget target);

// Pooling (pool_kernels.cu); geometry's out_c == in_c.
enum class PoolKind : uint8_t { kMax, kAverage };

// y[n, oh, ow, c] over the window's taps inside x (padding ignored):
// kMax: the first maximum in row-major window order (a later element
// replaces it only when strictly greater; NaN never does), its flat index
// into x stored in argmax[i] when argmax is non-null; kAverage: the float
// sum in row-major window order divided by the number of taps inside x.
// x and y are float32, or bfloat16 when flagged (read as float, y rounded
// once: float32 staging's bits).
struct Pool2DForwardArgs {
  WindowGeometry g;
  PoolKind kind = PoolKind::kMax;
  const void* x = nullptr;
  void* y = nullptr;
  int64_t* argmax = nullptr;  // optional, one per y element
  bool x_bf16 = false, y_bf16 = false;
};
int RunPool2DForward(const Pool2DForwardArgs& args, KernelTarget target);

// dx[n, ih, iw, c] = 0 + the sum over the windows containing it (oh, then
// ow, ascending): kMax adds dy[o] where argmax[o] is this element's flat
// index; kAverage adds dy[o] / (taps of window o inside x). Every dx
// element is written (0 where no window adds). Deterministic. dy and dx
// float32 or bfloat16, as above.
struct Pool2DBackwardArgs {
  WindowGeometry g;
  PoolKind kind = PoolKind::kMax;
  const void* dy = nullptr;
  const int64_t* argmax = nullptr;  // kMax only, from RunPool2DForward
  void* dx = nullptr;
  bool dy_bf16 = false, dx_bf16 = false;
};
int RunPool2DBackward(const Pool2DBackwardArgs& args, KernelTarget target);

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_CONV_KERNELS_H_
