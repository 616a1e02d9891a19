// Turning CUDA runtime errors into Status values, and a guard that makes a
// device current for a scope. Includes CUDA headers: for the CUDA backends' .cc files only.
#ifndef SLUICE_DEVICE_CUDA_CUDA_ERROR_H_
#define SLUICE_DEVICE_CUDA_CUDA_ERROR_H_

#include <cuda_runtime_api.h>

#include <string_view>

#include "sluice/core/status.h"

namespace sluice::gpu_internal {

// OK for cudaSuccess; otherwise "<what>: cudaErrorX (description)" with
// ResourceExhausted for out-of-memory, Unavailable when there is no usable
// device or driver, Internal for the rest. Clears CUDA's last-error slot.
Status CudaStatus(cudaError_t err, std::string_view what);

// Makes `ordinal` the calling thread's current device and restores the
// previous one when destroyed. status() says whether the switch worked.
class ScopedDevice {
 public:
  explicit ScopedDevice(int ordinal);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_CUDA_CUDA_ERROR_H_
