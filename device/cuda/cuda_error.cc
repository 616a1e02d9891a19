#include "sluice/device/cuda/cuda_error.h"

#include <fmt/format.h>

namespace sluice::gpu_internal {

Status CudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return Status::OK();
  cudaGetLastError();  // a non-sticky error must not surface in a later call
  std::string msg =
      fmt::format("{}: {} ({})", what, cudaGetErrorName(err), cudaGetErrorString(err));
  switch (err) {
    case cudaErrorMemoryAllocation: return Status::ResourceExhausted(msg);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice: return Status::Unavailable(msg);
    default: return Status::Internal(msg);
  }
}

ScopedDevice::ScopedDevice(int ordinal) {
  status_ = CudaStatus(cudaGetDevice(&previous_), "cudaGetDevice");
  if (!status_.ok()) {
    previous_ = -1;
    return;
  }
  if (previous_ == ordinal) return;
  status_ = CudaStatus(cudaSetDevice(ordinal), fmt::format("cudaSetDevice({})", ordinal));
  if (!status_.ok()) previous_ = -1;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace sluice::gpu_internal
