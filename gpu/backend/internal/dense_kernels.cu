// MatMul, BiasAdd and BiasGrad element loops (dense_kernels.h).
#include "sluice/gpu/backend/internal/backend_kernel_util.cuh"
#include "sluice/gpu/backend/internal/dense_kernels.h"

namespace sluice::gpu::backend::internal {

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

int RunBiasAdd(const BiasAddArgs& a, KernelTarget target) {
  const void* bias = a.bias;
  void* y = a.y;
  const int64_t channels = a.channels;
  const bool bb = a.bias_bf16, yb = a.y_bf16;
  return ForEach(a.rows * channels, target, [=] __host__ __device__(int64_t i) {
    StoreFloat(y, yb, i, Add(LoadFloat(y, yb, i), LoadFloat(bias, bb, i % channels)));
  });
}

int RunBiasGrad(const BiasGradArgs& a, KernelTarget target) {
  const void* dy = a.dy;
  void* db = a.db;
  const bool dyb = a.dy_bf16, dbb = a.db_bf16;
  double* partial = a.partial;
  const int64_t rows = a.rows, channels = a.channels;
  const int64_t chunks = (rows + kBiasGradChunkRows - 1) / kBiasGradChunkRows;
  // Pass 1: partial[q, j] over chunk q's rows (neighbouring threads read
  // neighbouring channels of one row).
  const int err = ForEach(chunks * channels, target, [=] __host__ __device__(int64_t i) {
    const int64_t q = i / channels, j = i - q * channels;
    const int64_t begin = q * kBiasGradChunkRows;
    const int64_t end = begin + kBiasGradChunkRows < rows ? begin + kBiasGradChunkRows : rows;
    double acc = 0.0;
    for (int64_t r = begin; r < end; ++r) {
      acc += static_cast<double>(LoadFloat(dy, dyb, r * channels + j));
    }
    partial[i] = acc;
  });
  if (err != 0) return err;
  // Pass 2: beta · db[j], then the partials in chunk order.
  const double beta = a.beta;
  return ForEach(channels, target, [=] __host__ __device__(int64_t j) {
    double sum = beta == 0.0 ? 0.0 : beta * static_cast<double>(LoadFloat(db, dbb, j));
    for (int64_t q = 0; q < chunks; ++q) sum += partial[q * channels + j];
    StoreFloat(db, dbb, j, static_cast<float>(sum));
  });
}

}  // namespace sluice::gpu::backend::internal
