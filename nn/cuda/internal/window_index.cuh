// Index arithmetic of the windowed kernels (conv_kernels.cu,
// pool_kernels.cu): NHWC flat indices and the spans of a window geometry
// (conv_kernels.h's WindowGeometry). Internal; nvcc only; no state.
#ifndef SLUICE_NN_CUDA_INTERNAL_WINDOW_INDEX_CUH_
#define SLUICE_NN_CUDA_INTERNAL_WINDOW_INDEX_CUH_

#include <cstdint>

#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"
#include "sluice/nn/cuda/internal/conv_kernels.h"

namespace sluice::gpu_backend_internal {

// An element of a [batch, rows, cols, channels] tensor by its flat index.
struct Nhwc {
  int64_t b, h, w, c;
};
SLUICE_HD Nhwc Unflatten(int64_t i, int64_t rows, int64_t cols, int64_t channels) {
  const int64_t p = i / channels;
  const int64_t q = p / cols;
  return Nhwc{q / rows, q % rows, p % cols, i % channels};
}

// A half-open range [lo, hi) along one dimension.
struct Span {
  int64_t lo, hi;
};

// The outputs along one dimension whose window contains input position
// `in`: [lo, hi), within [0, out). A window starts at o · stride - pad.
SLUICE_HD Span WindowsContaining(int64_t in, int64_t pad, int64_t kernel, int64_t stride,
                                 int64_t out) {
  const int64_t first = in + pad - kernel + 1;  // o · stride >= first
  const int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int64_t hi = (in + pad) / stride + 1;  // o · stride <= in + pad
  return Span{lo, hi < out ? hi : out};
}

// The input positions of window o along one dimension: [lo, hi), clipped.
SLUICE_HD Span WindowTaps(int64_t o, int64_t pad, int64_t kernel, int64_t stride, int64_t in) {
  const int64_t start = o * stride - pad;
  const int64_t end = start + kernel;
  return Span{start < 0 ? 0 : start, end < in ? end : in};
}

// Taps of window (oh, ow) inside the input, as the average's divisor.
SLUICE_HD float TapCount(const WindowGeometry& g, int64_t oh, int64_t ow) {
  const Span h = WindowTaps(oh, g.pad_top, g.kernel_h, g.stride_h, g.in_h);
  const Span w = WindowTaps(ow, g.pad_left, g.kernel_w, g.stride_w, g.in_w);
  return static_cast<float>((h.hi - h.lo) * (w.hi - w.lo));
}

// Window o's cell along one dimension when windows do not overlap
// (kernel <= stride): [o · stride - pad, (o + 1) · stride - pad) clipped
// to the input, the first cell starting at 0 and the last ending at `in`.
// The cells of o in [0, out) partition [0, in), and each holds its
// window's taps.
SLUICE_HD Span WindowCell(int64_t o, int64_t pad, int64_t stride, int64_t out, int64_t in) {
  auto clip = [in](int64_t v) { return v < 0 ? int64_t{0} : (v > in ? in : v); };
  return Span{o == 0 ? 0 : clip(o * stride - pad),
              o == out - 1 ? in : clip((o + 1) * stride - pad)};
}

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_WINDOW_INDEX_CUH_
