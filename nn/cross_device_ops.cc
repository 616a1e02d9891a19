// CrossDeviceOps: the default Add/Wait (everything reduced at Wait) and the
// registry of device modules' own ops (the host ops are in
// host_cross_device_ops.cc).
#include "sluice/nn/cross_device_ops.h"

#include <map>
#include <mutex>

namespace sluice::nn {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
std::map<DeviceKind, CrossDeviceOpsFactory>& Registry() {
  static std::map<DeviceKind, CrossDeviceOpsFactory> factories;
  return factories;
}

}  // namespace

Status CrossDeviceOps::Add(std::span<DeviceTensor* const> ready) {
  added_.insert(added_.end(), ready.begin(), ready.end());
  return Status::OK();
}

Status CrossDeviceOps::Wait() {
  std::vector<DeviceTensor*> tensors;
  tensors.swap(added_);
  if (tensors.empty()) return Status::OK();
  return AllReduceMean(std::span<DeviceTensor* const>(tensors));
}

void CrossDeviceOps::Cancel() { added_.clear(); }

void RegisterCrossDeviceOps(DeviceKind kind, CrossDeviceOpsFactory factory) {
  std::lock_guard<std::mutex> l(RegistryMutex());
  Registry()[kind] = std::move(factory);
}

Result<std::unique_ptr<CrossDeviceOps>> MakeCrossDeviceOps(Backend& backend, Communicator& comm,
                                                           CrossDeviceOptions options) {
  CrossDeviceOpsFactory factory;
  {
    std::lock_guard<std::mutex> l(RegistryMutex());
    auto it = Registry().find(backend.device().kind());
    if (it != Registry().end()) factory = it->second;
  }
  if (factory) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<CrossDeviceOps> ops, factory(backend, comm, options));
    if (ops) return ops;
  }
  return MakeHostCrossDeviceOps(backend, comm, options);
}

}  // namespace sluice::nn
