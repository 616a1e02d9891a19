// cuBLAS loaded with dlopen/dlsym, and BlasHandle (cublas_lib.h).
#include "sluice/nn/cuda/internal/cublas_lib.h"

#include <cublas_api.h>

#include <climits>
#include <string>

#include "sluice/device/cuda/cuda_error.h"
#include "sluice/device/runtime.h"
#include "sluice/device/dynamic_library.h"

namespace sluice::gpu_backend_internal {
namespace {

// The functions used, typed from cuBLAS's own prototypes.
struct CublasFunctions {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  // cublasGemmEx is overloaded in C++ (a legacy cudaDataType compute type):
  // the C function's type, spelled out.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
};

struct Loaded {
  Status status;
  CublasFunctions fn;
};

Loaded LoadOnce() {
  Loaded l;
  Result<gpu_internal::DynamicLibrary> lib =
      gpu_internal::DynamicLibrary::OpenFirst("cuBLAS", {"libcublas.so.13", "libcublas.so"});
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
  resolve("cublasGemmEx", &l.fn.gemm_ex);
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
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  gpu_internal::ScopedDevice scope(runtime->cuda_ordinal);
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
  gpu_internal::ScopedDevice scope(cuda_ordinal_);
  (void)Cublas().fn.destroy(static_cast<cublasHandle_t>(handle_));
}

bool BlasHandle::Sgemm(const MatMulArgs& a) {
  return Gemm(a, a.a, a.b, a.c, CUDA_R_32F, CUDA_R_32F);
}

bool BlasHandle::GemmBf16(const MatMulArgs& dims, const void* a, const void* b, void* c,
                          bool c_bfloat16) {
  return Gemm(dims, a, b, c, CUDA_R_16BF, c_bfloat16 ? CUDA_R_16BF : CUDA_R_32F);
}

bool BlasHandle::Gemm(const MatMulArgs& a, const void* pa, const void* pb, void* pc,
                      int operand_type, int out_type) {
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
  const cublasOperation_t op_b = a.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = a.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
  auto* h = static_cast<cublasHandle_t>(handle_);
  std::lock_guard lock(mu_);
  cublasStatus_t s;
  if (operand_type == CUDA_R_32F) {
    s = Cublas().fn.sgemm(h, op_b, op_a, n, m, k, &alpha, static_cast<const float*>(pb),
                          static_cast<int>(ldb), static_cast<const float*>(pa),
                          static_cast<int>(lda), &beta, static_cast<float*>(pc), n);
  } else {
    // Float32 accumulation and scalars whatever the storage types.
    s = Cublas().fn.gemm_ex(
        h, op_b, op_a, n, m, k, &alpha, pb, static_cast<cudaDataType>(operand_type),
        static_cast<int>(ldb), pa, static_cast<cudaDataType>(operand_type), static_cast<int>(lda),
        &beta, pc, static_cast<cudaDataType>(out_type), n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
  return s == CUBLAS_STATUS_SUCCESS;
}

}  // namespace sluice::gpu_backend_internal
