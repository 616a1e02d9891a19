// GpuBackend's dense algebra: MatMul (cuBLAS on a GPU when it loads, else
// the one-thread-per-element kernel), BiasAdd and BiasGrad (kernels in
// internal/dense_kernels.cu).
#include <limits>

#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/cublas_lib.h"
#include "sluice/nn/cuda/internal/dense_kernels.h"
#include "sluice/nn/kit/dense_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::gpu::backend {

Status GpuBackend::MatMul(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
                          bool transpose_b, float beta, DeviceTensor* c) {
  if (nn::kit::AnyBFloat16({&a, &b, c})) {
    if (IsBf16(a) && IsBf16(b) && c != nullptr && on_gpu()) {
      return MatMulBf16(a, transpose_a, b, transpose_b, beta, c);
    }
    return nn::kit::in_float32::MatMul(*this, a, transpose_a, b, transpose_b, beta, c);
  }
  SLUICE_ASSIGN_OR_RETURN(const nn::kit::MatMulDims d,
                          nn::kit::CheckMatMul(device(), a, transpose_a, b, transpose_b, c));
  if (d.m == 0 || d.n == 0) return Status::OK();
  const gpu_backend_internal::MatMulArgs args{a.data<float>(),
                                              b.data<float>(),
                                              c->data<float>(),
                                              d.m,
                                              d.k,
                                              d.n,
                                              transpose_a,
                                              transpose_b,
                                              beta};
  // cuBLAS when it loads and a handle can be made (otherwise, and for the
  // empty sum k == 0, the kernel: a missing library is not an error).
  gpu_backend_internal::BlasHandle* blas = nullptr;
  if (on_gpu() && d.k > 0) {
    Result<gpu_backend_internal::BlasHandle*> h =
        State<gpu_backend_internal::BlasHandle>(Slot::kBlas, [this] {
          return gpu_backend_internal::BlasHandle::Create(gpu_device(), stream().native_handle());
        });
    if (h.ok()) blas = *h;
  }
  return Launch("MatMul", [args, blas](KernelTarget t) {
    if (blas != nullptr && t.cuda_stream != nullptr && blas->Sgemm(args)) return 0;
    return gpu_backend_internal::RunMatMul(args, t);
  });
}

Status GpuBackend::MatMulBf16(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
                              bool transpose_b, float beta, DeviceTensor* c) {
  const DType out = IsBf16(*c) ? DType::kBFloat16 : DType::kFloat32;
  SLUICE_ASSIGN_OR_RETURN(
      const nn::kit::MatMulDims d,
      nn::kit::CheckMatMul(device(), a, transpose_a, b, transpose_b, c, DType::kBFloat16, out));
  if (d.m == 0 || d.n == 0) return Status::OK();
  Result<gpu_backend_internal::BlasHandle*> blas =
      State<gpu_backend_internal::BlasHandle>(Slot::kBlas, [this] {
        return gpu_backend_internal::BlasHandle::Create(gpu_device(), stream().native_handle());
      });
  // cuBLAS takes int sizes: every dimension of a and b (m, n, k and the
  // leading dimensions) must fit.
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  const bool fits =
      a.dim(0) <= kIntMax && a.dim(1) <= kIntMax && b.dim(0) <= kIntMax && b.dim(1) <= kIntMax;
  // Without cuBLAS, for the empty sum, or beyond int sizes: in float32.
  if (!blas.ok() || d.k == 0 || !fits) {
    return nn::kit::in_float32::MatMul(*this, a, transpose_a, b, transpose_b, beta, c);
  }
  const gpu_backend_internal::MatMulArgs dims{nullptr, nullptr,     nullptr,     d.m, d.k,
                                              d.n,     transpose_a, transpose_b, beta};
  const void* pa = a.raw_data();
  const void* pb = b.raw_data();
  void* pc = c->raw_data();
  const bool c_bf16 = out == DType::kBFloat16;
  gpu_backend_internal::BlasHandle* h = *blas;
  // A refusal now is cuBLAS's error status, reported by Launch as
  // cudaErrorNotSupported.
  constexpr int kCudaErrorNotSupported = 801;
  return Launch("MatMul", [=](KernelTarget) {
    return h->GemmBf16(dims, pa, pb, pc, c_bf16) ? 0 : kCudaErrorNotSupported;
  });
}

// BiasAdd and BiasGrad read and write bfloat16 tensors as they are (mixed
// precision: a float32 bias into a bfloat16 y), with float32 staging's bits.
Status GpuBackend::BiasAdd(const DeviceTensor& bias, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckBiasAdd(device(), bias, y, kFloatOrBf16));
  const int64_t c = bias.dim(0);
  if (c == 0 || y->num_elements() == 0) return Status::OK();
  const gpu_backend_internal::BiasAddArgs a{
      bias.raw_data(), y->raw_data(), y->num_elements() / c, c, IsBf16(bias), IsBf16(*y)};
  return Launch("BiasAdd", [a](KernelTarget t) { return gpu_backend_internal::RunBiasAdd(a, t); });
}

Status GpuBackend::BiasGrad(const DeviceTensor& dy, float beta, DeviceTensor* db) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckBiasGrad(device(), dy, db, kFloatOrBf16));
  const int64_t c = db->dim(0);
  if (c == 0) return Status::OK();
  const int64_t rows = dy.num_elements() / c;
  const int64_t chunks = gpu_backend_internal::BiasGradChunks(rows, c);
  // chunks x c double partial sums; none for an empty dy (db = beta · db).
  DeviceTensor partial;
  if (chunks > 0) {
    SLUICE_ASSIGN_OR_RETURN(partial, Scratch(DType::kFloat64, Shape{chunks, c}));
  }
  const gpu_backend_internal::BiasGradArgs a{rows > 0 ? dy.raw_data() : nullptr,
                                             db->raw_data(),
                                             chunks > 0 ? partial.data<double>() : nullptr,
                                             rows,
                                             c,
                                             beta,
                                             IsBf16(dy),
                                             IsBf16(*db)};
  return Launch("BiasGrad",
                [a](KernelTarget t) { return gpu_backend_internal::RunBiasGrad(a, t); });
}

}  // namespace sluice::gpu::backend
