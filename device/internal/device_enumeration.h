// The CUDA devices of this process, enumerated once (device/cuda/cuda_devices.cc).
#ifndef SLUICE_DEVICE_INTERNAL_DEVICE_ENUMERATION_H_
#define SLUICE_DEVICE_INTERNAL_DEVICE_ENUMERATION_H_

#include <vector>

#include "sluice/core/status.h"
#include "sluice/device/physical_devices.h"

namespace sluice::gpu_internal {

struct DeviceEnumeration {
  std::vector<gpu::PhysicalDevice> devices;  // empty when availability is not OK
  Status availability;
};

// Thread-safe; the first call asks CUDA, later calls return the same object.
const DeviceEnumeration& CudaDevices();

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_INTERNAL_DEVICE_ENUMERATION_H_
