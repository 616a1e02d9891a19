// DeviceManager: the state behind device/config.h, over an injected list of
// physical devices and a factory of region providers, so the configuration
// rules are tested on machines without a GPU (with host providers). The
// process-wide instance (config.cc) uses the CUDA enumeration and cudaMalloc.
//
// Thread-safety: every method is thread-safe.
#ifndef SLUICE_DEVICE_INTERNAL_DEVICE_MANAGER_H_
#define SLUICE_DEVICE_INTERNAL_DEVICE_MANAGER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/device/caching_allocator.h"
#include "sluice/device/config.h"
#include "sluice/device/physical_devices.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu_internal {

class DeviceManager {
 public:
  using ProviderFactory =
      std::function<std::unique_ptr<gpu::RegionProvider>(const gpu::PhysicalDevice&)>;

  // `availability` explains an empty `physical` list in messages.
  DeviceManager(std::vector<gpu::PhysicalDevice> physical, Status availability,
                ProviderFactory make_provider);
  ~DeviceManager();

  Status SetVisibleDevices(const std::vector<int>& physical_indices);
  std::vector<int> GetVisibleDevices() const;
  Status SetLogicalDeviceConfiguration(int physical_index,
                                       const std::vector<gpu::LogicalDeviceConfiguration>& configs);
  Result<std::vector<gpu::LogicalDeviceConfiguration>> GetLogicalDeviceConfiguration(
      int physical_index) const;

  std::vector<gpu::LogicalDevice> ListLogicalDevices();
  Result<gpu::CachingAllocator*> GetAllocator(int index);
  bool initialized() const;

 private:
  Status CheckPhysical(int physical_index) const;
  Status CheckNotInitialized(std::string_view what) const;
  void InitializeLocked();

  const std::vector<gpu::PhysicalDevice> physical_;
  const Status availability_;
  const ProviderFactory make_provider_;
  mutable std::mutex mu_;
  std::vector<int> visible_;
  std::vector<std::vector<gpu::LogicalDeviceConfiguration>> configs_;  // per physical device
  bool initialized_ = false;
  std::vector<gpu::LogicalDevice> logical_;
  std::vector<std::unique_ptr<gpu::CachingAllocator>> allocators_;  // per logical device, lazily
};

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_INTERNAL_DEVICE_MANAGER_H_
