// cuBLAS for GpuBackend::MatMul, opened at run time (dlopen; nn/cuda
// does not link it): the library with the functions MatMul uses, and a
// handle bound to one device and stream. No CUDA headers here (the types
// stay in cublas_lib.cc), so tests can include it. Internal.
#ifndef SLUICE_NN_CUDA_INTERNAL_CUBLAS_LIB_H_
#define SLUICE_NN_CUDA_INTERNAL_CUBLAS_LIB_H_

#include <memory>
#include <mutex>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/nn/cuda/internal/dense_kernels.h"
#include "sluice/device/stream.h"

namespace sluice::gpu_backend_internal {

// Opens libcublas.so.13 (else libcublas.so) once per process and resolves
// every function BlasHandle calls. OK, or Unavailable naming the library
// (dlerror's reason) or the first symbol that did not resolve; the outcome
// is cached. Thread-safe.
Status LoadCublas();

// A cuBLAS handle made on a GPU and bound to one of its CUDA streams, in
// CUBLAS_DEFAULT_MATH mode: float32 products and sums, never TF32.
// Destroying it calls cublasDestroy_v2 with its GPU current (the stream
// must have drained and still exist). Sgemm may be called from several
// threads (a mutex orders them).
class BlasHandle {
 public:
  // REQUIRES: device is a GPU and cuda_stream one of its streams.
  static Result<std::shared_ptr<BlasHandle>> Create(const Device& device, void* cuda_stream);
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;

  // Queues args (as RunMatMul computes it) on the stream with cublasSgemm_v2.
  // False, with nothing queued, when cuBLAS refuses (a size beyond int, or
  // an error status): the caller then runs RunMatMul. REQUIRES: the
  // handle's GPU is current; m, n, k > 0.
  bool Sgemm(const MatMulArgs& args);
  // The same product with bfloat16 a and b (args' float pointers unused)
  // and c float32 or bfloat16, by cublasGemmEx with float32 accumulation
  // (tensor cores where the GPU has them). True when queued; false when
  // cuBLAS refused (nothing queued). REQUIRES as Sgemm; sizes fit int.
  bool GemmBf16(const MatMulArgs& dims, const void* a, const void* b, void* c, bool c_bfloat16);

 private:
  // Sgemm for float32 operands, else cublasGemmEx; the types are
  // cudaDataType values.
  bool Gemm(const MatMulArgs& dims, const void* a, const void* b, void* c, int operand_type,
            int out_type);

  BlasHandle(void* handle, int cuda_ordinal) : handle_(handle), cuda_ordinal_(cuda_ordinal) {}

  void* const handle_;  // cublasHandle_t
  const int cuda_ordinal_;
  std::mutex mu_;  // one Sgemm at a time on the handle
};

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_CUBLAS_LIB_H_
