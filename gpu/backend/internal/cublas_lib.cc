// cuBLAS loaded with dlopen/dlsym, and BlasHandle (cublas_lib.h).
#include "sluice/gpu/backend/internal/cublas_lib.h"

#include <cublas_api.h>

#include <climits>
#include <string>

#include "sluice/gpu/internal/cuda_error.h"
#include "sluice/gpu/internal/device_runtime.h"
#include "sluice/gpu/internal/dynamic_library.h"

namespace sluice::gpu::backend::internal {
namespace {

// The functions used, typed from cuBLAS's own prototypes.
struct CublasFunctions {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

struct Loaded {
  Status status;
  CublasFunctions fn;
};

Loaded LoadOnce() {
  Loaded l;
  Result<gpu::internal::DynamicLibrary> lib =
      gpu::internal::DynamicLibrary::OpenFirst("cuBLAS", {"libcublas.so.13", "libcublas.so"});
  if (!lib.ok()) {
    l.status = lib.status();
    return l;
  }
  std::string missing;
  auto resolve = [&](const char* name, auto* fn) {
    if (!lib->Resolve(name, fn)) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  resolve("cublasCreate_v2", &l.fn.create);
  resolve("cublasDestroy_v2", &l.fn.destroy);
  resolve("cublasSetStream_v2", &l.fn.set_stream);
  resolve("cublasSetMathMode", &l.fn.set_math_mode);
  resolve("cublasSgemm_v2", &l.fn.sgemm);
  if (!missing.empty()) l.status = Status::Unavailable("cuBLAS has no symbol " + missing);
  return l;
}

const Loaded& Cublas() {
  static const Loaded loaded = LoadOnce();
  return loaded;
}

Status BlasError(const char* what, cublasStatus_t s) {
  return Status::Internal(std::string(what) + " failed with cuBLAS status " + std::to_string(s));
}

bool FitsInt(int64_t v) { return v <= INT_MAX; }

}  // namespace

Status LoadCublas() { return Cublas().status; }

Result<std::shared_ptr<BlasHandle>> BlasHandle::Create(const Device& device, void* cuda_stream) {
  SLUICE_RETURN_IF_ERROR(LoadCublas());
  const CublasFunctions& fn = Cublas().fn;
  SLUICE_ASSIGN_OR_RETURN(const gpu::internal::DeviceRuntime* runtime,
                          gpu::internal::GetDeviceRuntime(device));
  gpu::internal::ScopedDevice scope(runtime->cuda_ordinal);
  SLUICE_RETURN_IF_ERROR(scope.status());
  cublasHandle_t h = nullptr;
  if (cublasStatus_t s = fn.create(&h); s != CUBLAS_STATUS_SUCCESS) {
    return BlasError("cublasCreate_v2", s);
  }
  std::shared_ptr<BlasHandle> handle(new BlasHandle(h, runtime->cuda_ordinal));
  if (cublasStatus_t s = fn.set_stream(h, static_cast<cudaStream_t>(cuda_stream));
      s != CUBLAS_STATUS_SUCCESS) {
    return BlasError("cublasSetStream_v2", s);
  }
  // CUBLAS_DEFAULT_MATH keeps float32 GEMMs in fp32 (no TF32 tensor-core
  // rounding of the inputs), so results match the CPU backend within the
  // tolerance of reordered float32 sums.
  if (cublasStatus_t s = fn.set_math_mode(h, CUBLAS_DEFAULT_MATH); s != CUBLAS_STATUS_SUCCESS) {
    return BlasError("cublasSetMathMode", s);
  }
  return handle;
}

BlasHandle::~BlasHandle() {
  gpu::internal::ScopedDevice scope(cuda_ordinal_);
  (void)Cublas().fn.destroy(static_cast<cublasHandle_t>(handle_));
}

bool BlasHandle::Sgemm(const MatMulArgs& a) {
  // Row-major c[m, n] = op(a) op(b) is column-major c^T [n, m] =
  // op(b)^T op(a)^T: a row-major matrix read column-major is its
  // transpose, so b comes first with its own transpose flag, and the
  // leading dimensions are the stored matrices' row lengths.
  const int64_t lda = a.transpose_a ? a.m : a.k;
  const int64_t ldb = a.transpose_b ? a.k : a.n;
  if (!FitsInt(a.m) || !FitsInt(a.n) || !FitsInt(a.k) || !FitsInt(lda) || !FitsInt(ldb)) {
    return false;
  }
  const float alpha = 1.0f;
  const float beta = a.beta;  // cuBLAS does not read c when beta == 0
  std::lock_guard lock(mu_);
  const cublasStatus_t s = Cublas().fn.sgemm(
      static_cast<cublasHandle_t>(handle_), a.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      a.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(a.n), static_cast<int>(a.m),
      static_cast<int>(a.k), &alpha, a.b, static_cast<int>(ldb), a.a, static_cast<int>(lda), &beta,
      a.c, static_cast<int>(a.n));
  return s == CUBLAS_STATUS_SUCCESS;
}

}  // namespace sluice::gpu::backend::internal
