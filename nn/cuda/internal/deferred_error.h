// DeferredError: what a kernel found wrong in its input, written to device
// memory for the backend to report at its next wait (nn/cuda/cuda_backend.h).
// A plain struct shared by the .cu kernels and the host code. Internal.
#ifndef SLUICE_NN_CUDA_INTERNAL_DEFERRED_ERROR_H_
#define SLUICE_NN_CUDA_INTERNAL_DEFERRED_ERROR_H_

#include <cstdint>

namespace sluice::gpu_backend_internal {

struct DeferredError {
  enum Code : int64_t {
    kNone = 0,
    // CrossEntropy: labels[row] == value is outside [0, limit).
    kClassIdOutOfRange = 1,
  };
  int64_t code = kNone;  // the first kernel to set it wins (atomicCAS from kNone)
  int64_t row = 0;
  int64_t value = 0;
  int64_t limit = 0;
};

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_DEFERRED_ERROR_H_
