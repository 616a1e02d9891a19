// The CUDA region providers: cudaMalloc for one device, cudaHostAlloc for
// pinned host memory.
#include <fmt/format.h>

#include "sluice/device/cuda/cuda_error.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu {
namespace {

class CudaDeviceRegionProvider final : public RegionProvider {
 public:
  explicit CudaDeviceRegionProvider(int ordinal) : ordinal_(ordinal) {}

  Result<void*> Allocate(size_t bytes) override {
    gpu_internal::ScopedDevice device(ordinal_);
    SLUICE_RETURN_IF_ERROR(device.status().WithContext(name()));
    void* p = nullptr;
    SLUICE_RETURN_IF_ERROR(gpu_internal::CudaStatus(
        cudaMalloc(&p, bytes), fmt::format("{}: cudaMalloc({})", name(), bytes)));
    return p;
  }

  void Free(void* region, size_t /*bytes*/) override {
    gpu_internal::ScopedDevice device(ordinal_);
    // At process exit the driver may already be gone; nothing to do then.
    (void)gpu_internal::CudaStatus(cudaFree(region), "cudaFree");
  }

  std::string name() const override { return fmt::format("cuda device {}", ordinal_); }

 private:
  const int ordinal_;
};

class CudaPinnedRegionProvider final : public RegionProvider {
 public:
  Result<void*> Allocate(size_t bytes) override {
    void* p = nullptr;
    SLUICE_RETURN_IF_ERROR(
        gpu_internal::CudaStatus(cudaHostAlloc(&p, bytes, cudaHostAllocPortable),
                                 fmt::format("{}: cudaHostAlloc({})", name(), bytes)));
    return p;
  }

  void Free(void* region, size_t /*bytes*/) override {
    (void)gpu_internal::CudaStatus(cudaFreeHost(region), "cudaFreeHost");
  }

  std::string name() const override { return "cuda pinned host"; }
};

}  // namespace

std::unique_ptr<RegionProvider> NewCudaDeviceRegionProvider(int cuda_ordinal) {
  return std::make_unique<CudaDeviceRegionProvider>(cuda_ordinal);
}

std::unique_ptr<RegionProvider> NewCudaPinnedRegionProvider() {
  return std::make_unique<CudaPinnedRegionProvider>();
}

}  // namespace sluice::gpu
