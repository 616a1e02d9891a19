#include "sluice/device/runtime.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "sluice/device/config.h"
#include "sluice/device/physical_devices.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::CachingAllocator;
using gpu::GetDeviceAllocator;
using gpu::GpuAvailability;
using gpu::ListLogicalDevices;
using gpu::LogicalDevice;
using gpu::NewHostRegionProvider;
using gpu::PinnedHostPool;

namespace {

const DeviceRuntime& HostRuntime() {
  static const DeviceRuntime* const runtime = [] {
    auto allocator = CachingAllocator::Create(NewHostRegionProvider(), {.name = "cpu:0"});
    auto staging =
        PinnedHostPool::CreateWithProvider(NewHostRegionProvider(), {.name = "cpu:0 staging"});
    // Both creations only fail on invalid options, which these are not.
    return new DeviceRuntime{Device::Cpu(), -1, allocator->release(), std::move(*staging)};
  }();
  return *runtime;
}

Result<PinnedHostPool> CudaStaging() {
  static const Result<PinnedHostPool>* const pool =
      new Result<PinnedHostPool>(PinnedHostPool::Create());
  return *pool;
}

}  // namespace

Status CheckHostDevice(const Device& device) {
  if (device.index() == 0) return Status::OK();
  return Status::InvalidArgument(device.ToString() +
                                 ": the device runtime's host backend is cpu:0 (no other cpu:N)");
}

Result<const DeviceRuntime*> GetDeviceRuntime(const Device& device) {
  if (device.is_cpu()) {
    SLUICE_RETURN_IF_ERROR(CheckHostDevice(device));
    return &HostRuntime();
  }
  static std::mutex mu;
  static auto* const runtimes = new std::map<int, DeviceRuntime*>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = runtimes->find(device.index()); it != runtimes->end()) return it->second;

  if (Status available = GpuAvailability(); !available.ok()) {
    return Status(available.code(), device.ToString() + ": " + std::string(available.message()));
  }
  std::vector<LogicalDevice> logical = ListLogicalDevices();
  if (device.index() < 0 || device.index() >= static_cast<int>(logical.size())) {
    return Status::NotFound(
        fmt::format("{}: no such logical GPU ({} configured)", device.ToString(), logical.size()));
  }
  SLUICE_ASSIGN_OR_RETURN(CachingAllocator * allocator, GetDeviceAllocator(device.index()));
  SLUICE_ASSIGN_OR_RETURN(PinnedHostPool staging, CudaStaging());
  auto* runtime = new DeviceRuntime{device, logical[device.index()].physical_index, allocator,
                                    std::move(staging)};
  runtimes->emplace(device.index(), runtime);
  return runtime;
}

}  // namespace sluice::gpu_internal
