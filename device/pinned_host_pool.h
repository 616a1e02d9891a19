// PinnedHostPool: a cache of page-locked host buffers, the staging area for
// asynchronous host-to-device copies.
//
// cudaHostAlloc is slow (it pins pages with the driver), so the pool reserves
// pinned regions once and hands out blocks of them through a
// CachingAllocator; Acquire after warm-up never reaches the driver.
//
// Ownership: a PinnedHostPool is a cheap handle; copies share one pool. A
// PinnedBuffer owns its block and returns it when destroyed or Reset(); it
// keeps the pool alive, so buffers may outlive every pool handle. A buffer
// read by an asynchronous copy must live until that copy has finished.
// Thread-safety: Acquire, stats and ReleaseCachedMemory are thread-safe; a
// PinnedBuffer is not synchronized (one owner at a time).
#ifndef SLUICE_DEVICE_PINNED_HOST_POOL_H_
#define SLUICE_DEVICE_PINNED_HOST_POOL_H_

#include <cstddef>
#include <memory>

#include "sluice/core/result.h"
#include "sluice/device/allocator_stats.h"
#include "sluice/device/caching_allocator.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { Reset(); }
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  // The bytes asked for (the block may be larger).
  size_t size() const { return size_; }
  explicit operator bool() const { return data_ != nullptr; }
  // Returns the block to its pool now; the buffer becomes empty.
  void Reset();

 private:
  friend class PinnedHostPool;
  PinnedBuffer(std::shared_ptr<CachingAllocator> pool, void* data, size_t size)
      : pool_(std::move(pool)), data_(data), size_(size) {}
  std::shared_ptr<CachingAllocator> pool_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

class PinnedHostPool {
 public:
  // A pool of cudaHostAlloc memory. options.memory_limit caps the pinned
  // bytes (0: grow on demand); options.name defaults to "pinned host".
  // Creating it does not touch CUDA; without a driver Acquire fails with
  // Unavailable.
  static Result<PinnedHostPool> Create(CachingAllocatorOptions options = DefaultOptions());
  // The same pool over another provider (NewHostRegionProvider for tests or
  // for CPU-only staging).
  static Result<PinnedHostPool> CreateWithProvider(
      std::unique_ptr<RegionProvider> provider, CachingAllocatorOptions options = DefaultOptions());
  static CachingAllocatorOptions DefaultOptions();

  // A buffer of at least `bytes` bytes, aligned to 256 bytes. ResourceExhausted
  // with the sizes when the limit or the host is exhausted.
  Result<PinnedBuffer> Acquire(size_t bytes);
  AllocatorStats stats() const;
  void ResetPeakStats();
  // Unpins the regions no buffer uses.
  void ReleaseCachedMemory();

 private:
  explicit PinnedHostPool(std::shared_ptr<CachingAllocator> allocator)
      : allocator_(std::move(allocator)) {}
  std::shared_ptr<CachingAllocator> allocator_;
};

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_PINNED_HOST_POOL_H_
