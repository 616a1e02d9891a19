// The device runtime built without CUDA (no nvcc at configure time): the
// entry points of the CUDA backend (device/cuda/) say so and no GPU is
// listed. The host backend (cpu:0) works as in any build.
#include <memory>

#include "sluice/device/internal/device_enumeration.h"
#include "sluice/device/internal/stream_backends.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu_internal {
namespace {

Status NoCuda() {
  return Status::Unavailable(
      "no CUDA device: sluice was built without CUDA (no nvcc when CMake configured it; "
      "see SLUICE_WITH_CUDA)");
}

}  // namespace

const DeviceEnumeration& CudaDevices() {
  static const DeviceEnumeration* const enumeration = new DeviceEnumeration{{}, NoCuda()};
  return *enumeration;
}

Result<std::unique_ptr<gpu::Stream>> NewCudaStream(const Device& device, int /*cuda_ordinal*/) {
  return NoCuda().WithContext(device.ToString());
}

Result<std::unique_ptr<gpu::Event>> NewCudaEvent(const Device& device, int /*cuda_ordinal*/) {
  return NoCuda().WithContext(device.ToString());
}

}  // namespace sluice::gpu_internal

namespace sluice::gpu {
namespace {

// Never handed out for a device (none is listed); pinned host pools made
// directly fail on first use with the reason.
class NoCudaRegionProvider final : public RegionProvider {
 public:
  explicit NoCudaRegionProvider(std::string name) : name_(std::move(name)) {}
  Result<void*> Allocate(size_t /*bytes*/) override {
    return gpu_internal::NoCuda().WithContext(name_);
  }
  void Free(void* /*region*/, size_t /*bytes*/) override {}
  std::string name() const override { return name_; }

 private:
  const std::string name_;
};

}  // namespace

std::unique_ptr<RegionProvider> NewCudaDeviceRegionProvider(int cuda_ordinal) {
  return std::make_unique<NoCudaRegionProvider>("cuda device " + std::to_string(cuda_ordinal));
}

std::unique_ptr<RegionProvider> NewCudaPinnedRegionProvider() {
  return std::make_unique<NoCudaRegionProvider>("cuda pinned host");
}

}  // namespace sluice::gpu
