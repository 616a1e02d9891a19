// The element loops behind GpuBackend's elementwise methods (Fill, Cast,
// Axpby, Multiply, DropoutMask), dense algebra (MatMul, BiasAdd, BiasGrad)
// and reductions (Sum, CountArgMaxMatches), compiled by nvcc from
// dense_elementwise_kernels.cu, dense_kernels.cu, bias_kernels.cu and
// dense_reduction_kernels.cu. Each runs as a CUDA kernel on
// target.cuda_stream or, when it is null, as a host loop (the host device).
//
// Shared by C++20 (g++) and CUDA C++17 (nvcc) code: plain structs, no
// sluice or CUDA headers beyond the POD ones. The pointers are device
// pointers; arguments were validated by the caller (nn/kit/
// dense_checks.h). Every Run function returns a cudaError_t value: 0, or
// the launch error (host runs always return 0). Internal; thread-safe.
#ifndef SLUICE_NN_CUDA_INTERNAL_DENSE_KERNELS_H_
#define SLUICE_NN_CUDA_INTERNAL_DENSE_KERNELS_H_

#include <cstdint>

#include "sluice/device/cuda/kernel_types.h"

namespace sluice::gpu_backend_internal {

using ::sluice::gpu_internal::ElemType;
using ::sluice::gpu_internal::KernelTarget;

// --- Elementwise ---------------------------------------------------------------

// The elementwise loops below take float32 tensors, or bfloat16 ones where
// a *_bf16 flag is set: read as float, computed in float, each bfloat16
// output rounded once (nearest even), float32 staging's bits.

// x[i] = value for i < count.
struct FillArgs {
  void* x = nullptr;
  int64_t count = 0;
  float value = 0.0f;
  bool x_bf16 = false;
};
int RunFill(const FillArgs& args, KernelTarget target);

// y[i] = float(x[i]) * scale, x of `type` converted as static_cast<float>
// (16-bit floats exactly, wider types rounded to nearest); one rounding for
// the product, then one to bfloat16 (nearest even) when y_bfloat16 (y is
// then bfloat16 bits, else float).
struct ScaledCastArgs {
  const void* x = nullptr;
  ElemType type = ElemType::kFloat32;
  void* y = nullptr;
  bool y_bfloat16 = false;
  int64_t count = 0;
  float scale = 1.0f;
};
int RunScaledCast(const ScaledCastArgs& args, KernelTarget target);

// y[i] = alpha * x[i] + beta * y[i] (each product and the sum rounded once);
// with beta == 0, y[i] = alpha * x[i] without reading y (it may hold NaN).
struct AxpbyArgs {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t count = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  bool x_bf16 = false, y_bf16 = false;
};
int RunAxpby(const AxpbyArgs& args, KernelTarget target);

// y[i] = a[i] * b[i]; y may be a or b.
struct MultiplyArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  int64_t count = 0;
  bool a_bf16 = false, b_bf16 = false, y_bf16 = false;
};
int RunMultiply(const MultiplyArgs& args, KernelTarget target);

// mask[i] = keep if u_i >= rate, else 0, where u_i is the i-th
// Rng(seed, stream).UniformFloat() of core/rng.h: word i % 4 of the
// Philox4x32-10 block i / 4, as (u32 >> 8) * 2^-24. Bit-identical to the
// CPU backend's mask. keep = 1 / (1 - rate), computed by the caller in float.
struct DropoutMaskArgs {
  void* mask = nullptr;
  bool mask_bf16 = false;
  int64_t count = 0;
  float rate = 0.0f;
  float keep = 1.0f;
  uint64_t seed = 0;
  uint64_t stream = 0;
  const int64_t* stream_counter = nullptr;  // when set, the stream (read as the kernel runs)
};
int RunDropoutMask(const DropoutMaskArgs& args, KernelTarget target);

// --- Dense algebra ---------------------------------------------------------------

// c[m, n] = op(a) · op(b) + beta · c, row-major; a is [m, k] ([k, m] when
// transpose_a), b is [k, n] ([n, k] when transpose_b). One output element
// per thread: k products accumulated in float in order of p, then
// beta · c added (c not read when beta == 0). REQUIRES m, n > 0; k may be 0.
struct MatMulArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t m = 0, k = 0, n = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  float beta = 0.0f;
};
int RunMatMul(const MatMulArgs& args, KernelTarget target);

// y[r, j] += bias[j] for y viewed as [rows, channels]. Each of bias and y
// is float32, or bfloat16 when its *_bf16 flag is set: the sum is one float
// addition, rounded once more into a bfloat16 y (float32 staging's bits).
// Runs of 8 elements per thread when channels % 8 == 0 (bias_kernels.cu).
struct BiasAddArgs {
  const void* bias = nullptr;
  void* y = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
  bool bias_bf16 = false, y_bf16 = false;
};
int RunBiasAdd(const BiasAddArgs& args, KernelTarget target);

// BiasGrad's geometry: threads per block, and the rows of one channel
// each pass-1 thread adds.
constexpr int64_t kBiasGradThreads = 256;
constexpr int64_t kBiasGradRowsPerThread = 32;
// Rows of dy one partial sum covers: (256 / channels) lanes of 32 rows each
// for channels <= 256, else 32.
constexpr int64_t BiasGradChunkRows(int64_t channels) {
  return (channels <= kBiasGradThreads ? kBiasGradThreads / channels : 1) * kBiasGradRowsPerThread;
}
// Partial sums per channel: ceil(rows / chunk rows).
constexpr int64_t BiasGradChunks(int64_t rows, int64_t channels) {
  return (rows + BiasGradChunkRows(channels) - 1) / BiasGradChunkRows(channels);
}
// db[j] = Σ_r dy[r, j] + beta · db[j] (db not read when beta == 0), in
// double, rounded to float once. Two passes (bias_kernels.cu): partial[q, j]
// sums chunk q's rows (q < chunks = BiasGradChunks(rows, channels)) lane by
// lane, lanes added in order; then each db[j] adds its partials in a fixed
// tree, then beta · db[j]. The order depends on the shape only, never on the
// launch. `partial` is scratch of chunks · channels doubles (null when
// rows == 0). dy and db are float32, or bfloat16 when flagged (a bfloat16
// db gets the float32 sum rounded once more, as float32 staging gives).
struct BiasGradArgs {
  const void* dy = nullptr;
  void* db = nullptr;
  double* partial = nullptr;
  int64_t rows = 0;
  int64_t channels = 0;
  float beta = 0.0f;
  bool dy_bf16 = false, db_bf16 = false;
};
int RunBiasGrad(const BiasGradArgs& args, KernelTarget target);

// --- Reductions ---------------------------------------------------------------

// Partial sums or counts of one reduction call (fewer when there are fewer
// elements or rows); the host adds them in order.
constexpr int64_t kMaxReductionPartials = 8192;
// How many partials a reduction over `count` elements or rows uses.
constexpr int64_t ReductionPartials(int64_t count) {
  return count < kMaxReductionPartials ? count : kMaxReductionPartials;
}

// partial[p] = Σ x[p + s · partials] over s, in double, in order of s
// (partials = ReductionPartials(count) > 0).
struct SumArgs {
  const float* x = nullptr;
  int64_t count = 0;
  double* partial = nullptr;
};
int RunSum(const SumArgs& args, KernelTarget target);

// partial[p] = how many rows r ≡ p (mod partials) of scores [rows, classes]
// have their first maximum (NaNs never win) at the row's label: an int32 or
// int64 class id, or, for float32 labels [rows, classes], the first maximum
// of the labels' row. partials = ReductionPartials(rows) > 0.
struct ArgMaxMatchArgs {
  const float* scores = nullptr;
  const void* labels = nullptr;
  ElemType label_type = ElemType::kInt32;  // kInt32, kInt64 or kFloat32
  int64_t rows = 0;
  int64_t classes = 0;
  int64_t* partial = nullptr;
};
int RunArgMaxMatches(const ArgMaxMatchArgs& args, KernelTarget target);

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_DENSE_KERNELS_H_
