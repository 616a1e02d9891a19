// The physical GPUs this process can see (tf.config.list_physical_devices).
//
// The list is what the CUDA runtime enumerates, so it already honours
// CUDA_VISIBLE_DEVICES (and CUDA_DEVICE_ORDER): index i is CUDA ordinal i of
// this process, not the machine-wide number. CUDA reads those variables once,
// when it initializes; the list is taken once per process, on first call.
//
// No GPU, no driver (no libcuda.so) or CUDA_VISIBLE_DEVICES="" give an empty
// list, and GpuAvailability() says why; nothing aborts.
//
// Thread-safety: both functions are thread-safe.
#ifndef SLUICE_DEVICE_PHYSICAL_DEVICES_H_
#define SLUICE_DEVICE_PHYSICAL_DEVICES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/status.h"

namespace sluice::gpu {

struct PhysicalDevice {
  int index = 0;             // CUDA ordinal in this process
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int64_t total_memory = 0;  // bytes
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;
  std::string pci_bus_id;  // "0000:3b:00.0"

  // "/physical_device:GPU:0 (NVIDIA H100 80GB HBM3, 79.1 GiB, compute 9.0, 132 SMs, pci
  // 0000:3b:00.0)"
  std::string ToString() const;
};

std::vector<PhysicalDevice> ListPhysicalDevices();

// OK when at least one GPU is listed; otherwise Unavailable with CUDA's
// reason, e.g. "no CUDA device: cudaGetDeviceCount: cudaErrorInsufficientDriver
// (CUDA driver version is insufficient for CUDA runtime version)", followed
// by the value of CUDA_VISIBLE_DEVICES when it is set. GPU tests skip with it.
Status GpuAvailability();

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_PHYSICAL_DEVICES_H_
