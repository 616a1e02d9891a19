// GpuBackend's dense algebra: MatMul (cuBLAS on a GPU when it loads, else
// the one-thread-per-element kernel), BiasAdd and BiasGrad (kernels in
// internal/dense_kernels.cu).
#include "sluice/gpu/backend/gpu_backend.h"
#include "sluice/gpu/backend/internal/cublas_lib.h"
#include "sluice/gpu/backend/internal/dense_kernels.h"
#include "sluice/nn/internal/dense_checks.h"

namespace sluice::gpu::backend {

Status GpuBackend::MatMul(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
                          bool transpose_b, float beta, DeviceTensor* c) {
  SLUICE_ASSIGN_OR_RETURN(const nn::internal::MatMulDims d,
                          nn::internal::CheckMatMul(device(), a, transpose_a, b, transpose_b, c));
  if (d.m == 0 || d.n == 0) return Status::OK();
  const internal::MatMulArgs args{a.data<float>(),
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
  internal::BlasHandle* blas = nullptr;
  if (on_gpu() && d.k > 0) {
    Result<internal::BlasHandle*> h = State<internal::BlasHandle>(Slot::kBlas, [this] {
      return internal::BlasHandle::Create(gpu_device(), stream().native_handle());
    });
    if (h.ok()) blas = *h;
  }
  return Launch("MatMul", [args, blas](KernelTarget t) {
    if (blas != nullptr && t.cuda_stream != nullptr && blas->Sgemm(args)) return 0;
    return internal::RunMatMul(args, t);
  });
}

Status GpuBackend::BiasAdd(const DeviceTensor& bias, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckBiasAdd(device(), bias, y));
  const int64_t c = bias.dim(0);
  if (c == 0 || y->num_elements() == 0) return Status::OK();
  const internal::BiasAddArgs a{bias.data<float>(), y->data<float>(), y->num_elements() / c, c};
  return Launch("BiasAdd", [a](KernelTarget t) { return internal::RunBiasAdd(a, t); });
}

Status GpuBackend::BiasGrad(const DeviceTensor& dy, float beta, DeviceTensor* db) {
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckBiasGrad(device(), dy, db));
  const int64_t c = db->dim(0);
  if (c == 0) return Status::OK();
  const int64_t rows = dy.num_elements() / c;
  const int64_t chunks = (rows + internal::kBiasGradChunkRows - 1) / internal::kBiasGradChunkRows;
  // chunks x c double partial sums; none for an empty dy (db = beta · db).
  DeviceTensor partial;
  if (chunks > 0) {
    SLUICE_ASSIGN_OR_RETURN(partial, Scratch(DType::kFloat64, Shape{chunks, c}));
  }
  const internal::BiasGradArgs a{rows > 0 ? dy.data<float>() : nullptr,
                                 db->data<float>(),
                                 chunks > 0 ? partial.data<double>() : nullptr,
                                 rows,
                                 c,
                                 beta};
  return Launch("BiasGrad", [a](KernelTarget t) { return internal::RunBiasGrad(a, t); });
}

}  // namespace sluice::gpu::backend
