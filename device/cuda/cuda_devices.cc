// The CUDA backend of device/physical_devices.h: the devices the CUDA
// runtime enumerates.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>

#include "sluice/device/cuda/cuda_error.h"
#include "sluice/device/internal/device_enumeration.h"

namespace sluice::gpu_internal {
namespace {

Status Enumerate(std::vector<gpu::PhysicalDevice>* devices) {
  int count = 0;
  SLUICE_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    SLUICE_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, i),
                                      fmt::format("cudaGetDeviceProperties({})", i)));
    gpu::PhysicalDevice d;
    d.index = i;
    d.name = prop.name;
    d.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
    d.compute_capability_major = prop.major;
    d.compute_capability_minor = prop.minor;
    d.multiprocessor_count = prop.multiProcessorCount;
    d.pci_bus_id =
        fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    devices->push_back(std::move(d));
  }
  if (count == 0) return Status::Unavailable("cudaGetDeviceCount: 0 devices");
  return Status::OK();
}

}  // namespace

const DeviceEnumeration& CudaDevices() {
  static const DeviceEnumeration* const enumeration = [] {
    auto* e = new DeviceEnumeration;
    Status s = Enumerate(&e->devices);
    if (!s.ok()) {
      e->devices.clear();
      std::string msg = fmt::format("no CUDA device: {}", s.message());
      if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
        msg += fmt::format(" (CUDA_VISIBLE_DEVICES=\"{}\")", visible);
      }
      e->availability = Status::Unavailable(msg);
    }
    return e;
  }();
  return *enumeration;
}

}  // namespace sluice::gpu_internal
