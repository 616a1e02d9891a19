// The process-wide DeviceManager over CUDA's devices, behind device/config.h.
#include "sluice/device/config.h"

#include <fmt/format.h>

#include "sluice/device/internal/device_enumeration.h"
#include "sluice/device/internal/device_manager.h"

namespace sluice::gpu {
namespace {

gpu_internal::DeviceManager& Manager() {
  // Never destroyed: allocators must not cudaFree after the driver is gone.
  static gpu_internal::DeviceManager* const manager = [] {
    const gpu_internal::DeviceEnumeration& e = gpu_internal::CudaDevices();
    return new gpu_internal::DeviceManager(e.devices, e.availability, [](const PhysicalDevice& d) {
      return NewCudaDeviceRegionProvider(d.index);
    });
  }();
  return *manager;
}

}  // namespace

std::string LogicalDevice::ToString() const {
  return fmt::format(
      "/device:GPU:{} (on /physical_device:GPU:{}, {})", index, physical_index,
      memory_limit == 0 ? std::string("grow on demand") : "limit " + FormatBytes(memory_limit));
}

Status SetVisibleDevices(const std::vector<int>& physical_indices) {
  return Manager().SetVisibleDevices(physical_indices);
}
std::vector<int> GetVisibleDevices() { return Manager().GetVisibleDevices(); }

Status SetLogicalDeviceConfiguration(int physical_index,
                                     const std::vector<LogicalDeviceConfiguration>& configs) {
  return Manager().SetLogicalDeviceConfiguration(physical_index, configs);
}
Status SetMemoryLimit(int physical_index, int64_t bytes) {
  return Manager().SetLogicalDeviceConfiguration(physical_index, {{.memory_limit = bytes}});
}
Result<std::vector<LogicalDeviceConfiguration>> GetLogicalDeviceConfiguration(int physical_index) {
  return Manager().GetLogicalDeviceConfiguration(physical_index);
}

std::vector<LogicalDevice> ListLogicalDevices() { return Manager().ListLogicalDevices(); }

Result<CachingAllocator*> GetDeviceAllocator(int index) { return Manager().GetAllocator(index); }

Result<AllocatorStats> GetMemoryInfo(int index) {
  SLUICE_ASSIGN_OR_RETURN(CachingAllocator * a, Manager().GetAllocator(index));
  return a->stats();
}

Status ResetMemoryStats(int index) {
  SLUICE_ASSIGN_OR_RETURN(CachingAllocator * a, Manager().GetAllocator(index));
  a->ResetPeakStats();
  return Status::OK();
}

}  // namespace sluice::gpu
