#include "sluice/device/stream.h"

#include <fmt/format.h>

#include <string>

#include "sluice/device/internal/stream_backends.h"
#include "sluice/device/runtime.h"

namespace sluice::gpu {

Result<std::unique_ptr<Stream>> NewStream(const Device& device) {
  if (device.is_cpu()) {
    SLUICE_RETURN_IF_ERROR(gpu_internal::CheckHostDevice(device));
    return gpu_internal::NewHostStream();
  }
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  return gpu_internal::NewCudaStream(device, runtime->cuda_ordinal);
}

Result<std::unique_ptr<Event>> NewEvent(const Device& device) {
  if (device.is_cpu()) {
    SLUICE_RETURN_IF_ERROR(gpu_internal::CheckHostDevice(device));
    return gpu_internal::NewHostEvent();
  }
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  return gpu_internal::NewCudaEvent(device, runtime->cuda_ordinal);
}

}  // namespace sluice::gpu
