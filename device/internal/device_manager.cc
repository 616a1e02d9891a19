#include "sluice/device/internal/device_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "sluice/device/allocator_stats.h"

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::CachingAllocator;
using gpu::FormatBytes;
using gpu::LogicalDevice;
using gpu::LogicalDeviceConfiguration;
using gpu::PhysicalDevice;

DeviceManager::DeviceManager(std::vector<PhysicalDevice> physical, Status availability,
                             ProviderFactory make_provider)
    : physical_(std::move(physical)),
      availability_(std::move(availability)),
      make_provider_(std::move(make_provider)),
      configs_(physical_.size()) {
  visible_.resize(physical_.size());
  std::iota(visible_.begin(), visible_.end(), 0);
}

DeviceManager::~DeviceManager() = default;

Status DeviceManager::CheckPhysical(int physical_index) const {
  if (physical_index >= 0 && static_cast<size_t>(physical_index) < physical_.size()) {
    return Status::OK();
  }
  std::string msg = fmt::format("physical GPU {} does not exist ({} physical GPUs", physical_index,
                                physical_.size());
  if (!availability_.ok()) msg += fmt::format(": {}", availability_.message());
  return Status::InvalidArgument(msg + ")");
}

Status DeviceManager::CheckNotInitialized(std::string_view what) const {
  if (!initialized_) return Status::OK();
  return Status::FailedPrecondition(
      fmt::format("{} cannot be changed after the GPU runtime has been initialized (by the first "
                  "ListLogicalDevices, GetDeviceAllocator or GetMemoryInfo); configure first",
                  what));
}

Status DeviceManager::SetVisibleDevices(const std::vector<int>& physical_indices) {
  std::lock_guard lock(mu_);
  SLUICE_RETURN_IF_ERROR(CheckNotInitialized("visible devices"));
  for (size_t i = 0; i < physical_indices.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(CheckPhysical(physical_indices[i]).WithContext("SetVisibleDevices"));
    if (std::find(physical_indices.begin(), physical_indices.begin() + i, physical_indices[i]) !=
        physical_indices.begin() + i) {
      return Status::InvalidArgument(
          fmt::format("SetVisibleDevices: physical GPU {} is listed twice", physical_indices[i]));
    }
  }
  visible_ = physical_indices;
  return Status::OK();
}

std::vector<int> DeviceManager::GetVisibleDevices() const {
  std::lock_guard lock(mu_);
  return visible_;
}

Status DeviceManager::SetLogicalDeviceConfiguration(
    int physical_index, const std::vector<LogicalDeviceConfiguration>& configs) {
  std::lock_guard lock(mu_);
  const std::string what = fmt::format("SetLogicalDeviceConfiguration(GPU {})", physical_index);
  SLUICE_RETURN_IF_ERROR(CheckNotInitialized("logical device configurations"));
  SLUICE_RETURN_IF_ERROR(CheckPhysical(physical_index).WithContext(what));
  const PhysicalDevice& device = physical_[physical_index];
  int64_t sum = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const int64_t limit = configs[i].memory_limit;
    if (limit < 0 || (limit == 0 && configs.size() > 1)) {
      return Status::InvalidArgument(fmt::format(
          "{}: logical device {} has memory_limit {}; it must be positive when a GPU is split "
          "(0, grow on demand, only for a single device)",
          what, i, limit));
    }
    if (limit > device.total_memory - sum) {
      return Status::InvalidArgument(fmt::format(
          "{}: memory limits add up to more than the GPU's {} ({} bytes) at logical device {}",
          what, FormatBytes(device.total_memory), device.total_memory, i));
    }
    sum += limit;
  }
  configs_[physical_index] = configs;
  return Status::OK();
}

Result<std::vector<LogicalDeviceConfiguration>> DeviceManager::GetLogicalDeviceConfiguration(
    int physical_index) const {
  std::lock_guard lock(mu_);
  SLUICE_RETURN_IF_ERROR(
      CheckPhysical(physical_index).WithContext("GetLogicalDeviceConfiguration"));
  return configs_[physical_index];
}

void DeviceManager::InitializeLocked() {
  if (initialized_) return;
  initialized_ = true;
  for (int p : visible_) {
    std::vector<LogicalDeviceConfiguration> configs = configs_[p];
    if (configs.empty()) configs.push_back({});
    for (const LogicalDeviceConfiguration& c : configs) {
      logical_.push_back({.index = static_cast<int>(logical_.size()),
                          .physical_index = p,
                          .memory_limit = c.memory_limit});
    }
  }
  allocators_.resize(logical_.size());
}

std::vector<LogicalDevice> DeviceManager::ListLogicalDevices() {
  std::lock_guard lock(mu_);
  InitializeLocked();
  return logical_;
}

Result<CachingAllocator*> DeviceManager::GetAllocator(int index) {
  std::lock_guard lock(mu_);
  InitializeLocked();
  if (index < 0 || static_cast<size_t>(index) >= logical_.size()) {
    std::string msg = fmt::format("gpu:{}: no such logical GPU device ({} logical devices", index,
                                  logical_.size());
    if (!availability_.ok()) msg += fmt::format("; {}", availability_.message());
    return Status::NotFound(msg + ")");
  }
  if (allocators_[index] == nullptr) {
    const LogicalDevice& d = logical_[index];
    SLUICE_ASSIGN_OR_RETURN(
        allocators_[index],
        CachingAllocator::Create(make_provider_(physical_[d.physical_index]),
                                 {.name = fmt::format("gpu:{}", index),
                                  .memory_limit = static_cast<size_t>(d.memory_limit)}));
  }
  return allocators_[index].get();
}

bool DeviceManager::initialized() const {
  std::lock_guard lock(mu_);
  return initialized_;
}

}  // namespace sluice::gpu_internal
