#include "sluice/device/physical_devices.h"

#include <fmt/format.h>

#include "sluice/device/allocator_stats.h"
#include "sluice/device/internal/device_enumeration.h"

namespace sluice::gpu {

std::string PhysicalDevice::ToString() const {
  return fmt::format("/physical_device:GPU:{} ({}, {}, compute {}.{}, {} SMs, pci {})", index, name,
                     FormatBytes(total_memory), compute_capability_major, compute_capability_minor,
                     multiprocessor_count, pci_bus_id);
}

std::vector<PhysicalDevice> ListPhysicalDevices() { return gpu_internal::CudaDevices().devices; }

Status GpuAvailability() { return gpu_internal::CudaDevices().availability; }

}  // namespace sluice::gpu
