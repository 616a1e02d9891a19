// The MatMul element loop (dense_kernels.h); BiasAdd and BiasGrad are in
// bias_kernels.cu.
#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"
#include "sluice/nn/cuda/internal/dense_kernels.h"

namespace sluice::gpu_backend_internal {

int RunMatMul(const MatMulArgs& args, KernelTarget target) {
  const MatMulArgs a = args;
  // Element strides of op(a)'s rows and inner index, and op(b)'s inner
  // index and columns, in the stored row-major matrices.
  const int64_t a_row = a.transpose_a ? 1 : a.k, a_inner = a.transpose_a ? a.m : 1;
  const int64_t b_inner = a.transpose_b ? 1 : a.n, b_col = a.transpose_b ? a.k : 1;
  return ForEach(a.m * a.n, target, [=] __host__ __device__(int64_t i) {
    const int64_t r = i / a.n, j = i - r * a.n;
    const float* pa = a.a + r * a_row;
    const float* pb = a.b + j * b_col;
    float acc = 0.0f;
    for (int64_t p = 0; p < a.k; ++p) acc = Add(acc, Mul(pa[p * a_inner], pb[p * b_inner]));
    a.c[i] = a.beta == 0.0f ? acc : Add(acc, Mul(a.beta, a.c[i]));
  });
}

}  // namespace sluice::gpu_backend_internal
