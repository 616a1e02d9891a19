// RegionProvider: where a caching allocator gets its memory from.
//
// The allocators of this module (CachingAllocator, PinnedHostPool) keep all
// their bookkeeping in host memory and ask a provider only for large
// regions, which they split into blocks and reuse. The provider is the only
// part that touches a device library:
//   - NewCudaDeviceRegionProvider: cudaMalloc / cudaFree on one GPU;
//   - NewCudaPinnedRegionProvider: cudaHostAlloc / cudaFreeHost (page-locked
//     host memory, portable to every GPU);
//   - NewHostRegionProvider: ordinary aligned host memory, optionally with a
//     capacity so it behaves like a device of that size (used by the tests
//     on machines without a GPU, and usable as a plain host pool).
//
// Ownership: the allocator that is given a provider owns it. A region is
// returned to the provider that made it, with the size it was made with.
//
// Thread-safety: a provider may be called from any thread; the allocators
// call it under their own lock, one call at a time.
#ifndef SLUICE_DEVICE_REGION_PROVIDER_H_
#define SLUICE_DEVICE_REGION_PROVIDER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "sluice/core/result.h"

namespace sluice::gpu {

class RegionProvider {
 public:
  virtual ~RegionProvider() = default;

  // A new region of `bytes` bytes, aligned to at least 256 bytes.
  // ResourceExhausted when the memory is not there (the allocator then
  // releases what it caches and retries); another code for other failures.
  // REQUIRES: bytes > 0.
  virtual Result<void*> Allocate(size_t bytes) = 0;
  // Gives back a region from Allocate(bytes).
  virtual void Free(void* region, size_t bytes) = 0;
  // For messages: "cuda device 0", "cuda pinned host", "host".
  virtual std::string name() const = 0;
};

// Host memory from the C++ heap. With capacity > 0, Allocate fails with
// ResourceExhausted once the regions it has out would exceed `capacity`
// bytes, as a device of that size would.
std::unique_ptr<RegionProvider> NewHostRegionProvider(size_t capacity = 0);

// Device memory of the GPU with this CUDA ordinal (as this process numbers
// them, after CUDA_VISIBLE_DEVICES). Calls never change the calling thread's
// current device.
std::unique_ptr<RegionProvider> NewCudaDeviceRegionProvider(int cuda_ordinal);

// Page-locked host memory (cudaHostAlloc with cudaHostAllocPortable), the
// source of asynchronous host-to-device copies.
std::unique_ptr<RegionProvider> NewCudaPinnedRegionProvider();

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_REGION_PROVIDER_H_
