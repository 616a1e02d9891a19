// CachingAllocator: a best-fit, splitting and coalescing allocator over the
// regions of a RegionProvider (device memory, pinned host memory).
//
// Memory is reserved from the provider in regions (2 MiB for requests up to
// 1 MiB, the request rounded up to 2 MiB otherwise) and carved into blocks.
// A freed block merges with free neighbours of its region and stays cached
// for the next request: after warm-up Allocate and Free never reach the
// provider (no cudaMalloc on the hot path). Regions are returned only by
// ReleaseCachedMemory(), under memory pressure, and by the destructor.
//
// Memory policy: with memory_limit == 0 the allocator grows on demand until
// the provider refuses; otherwise it never reserves more than memory_limit
// bytes. Either way a request that cannot be met, even after returning every
// free region, is ResourceExhausted naming the request, the limit, the bytes
// in use and the largest free block; nothing crashes.
//
// Streams: each region belongs to the stream that was current when it was
// reserved, and a block is reused only by requests on that stream (work on
// one stream runs in order, so the reuse is safe without waiting). A block
// used by another stream is freed with FreeAfter(ptr, events): it returns to
// the cache once the events (recorded after that work) have completed.
//
// Ownership: the allocator owns its provider and every region. Pointers it
// hands out are valid until freed or until the allocator is destroyed.
// Thread-safety: all methods are thread-safe (one internal mutex).
#ifndef SLUICE_DEVICE_CACHING_ALLOCATOR_H_
#define SLUICE_DEVICE_CACHING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/device/allocator_stats.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu {

class Event;  // stream.h

// A CUDA stream as an opaque number (a cudaStream_t cast to an integer);
// 0 is the default stream.
using StreamId = uintptr_t;

struct CachingAllocatorOptions {
  // Names the allocator in messages: "gpu:0", "pinned host".
  std::string name = "allocator";
  // Most bytes ever reserved from the provider; 0 grows on demand.
  size_t memory_limit = 0;
  // Every block's size is a multiple of this (a power of two, >= 16).
  size_t alignment = 512;
  // Requests up to small_size share regions of small_region bytes; larger
  // requests get a region of their size rounded up to large_granularity.
  // REQUIRES: small_size <= small_region, both multiples of alignment.
  size_t small_size = size_t{1} << 20;
  size_t small_region = size_t{2} << 20;
  size_t large_granularity = size_t{2} << 20;
};

class CachingAllocator {
 public:
  // InvalidArgument if the options break their REQUIRES lines.
  static Result<std::unique_ptr<CachingAllocator>> Create(std::unique_ptr<RegionProvider> provider,
                                                          CachingAllocatorOptions options = {});
  // Returns every region to the provider. REQUIRES: every block was freed
  // (pointers still out become dangling).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // At least `bytes` bytes (0 counts as 1), aligned to 256 bytes (as
  // cudaMalloc's memory) and rounded up to a multiple of
  // options().alignment, for use on `stream`. ResourceExhausted as described above.
  Result<void*> Allocate(size_t bytes, StreamId stream = 0);
  // Returns a block to the cache. InvalidArgument (and nothing changes) if
  // `ptr` is not a live block of this allocator: a double free, a pointer
  // into the middle of a block, another allocator's pointer.
  Status Free(void* ptr);
  // Free, deferred until every event in `events` has completed: work on
  // other streams, recorded in the events, still uses the block. Until then
  // it counts as in use (and in stats().pending_frees). Completed events are
  // looked for, oldest first, at the start of every Allocate and by
  // ReleaseCachedMemory(); a request that would fail waits for all pending
  // events first. An event whose query fails counts as completed.
  // InvalidArgument as Free. REQUIRES: not called from a CUDA host function
  // (Allocate then queries CUDA events).
  Status FreeAfter(void* ptr, std::vector<std::shared_ptr<Event>> events);
  // The usable size of the live block at `ptr`; InvalidArgument as Free.
  Result<size_t> AllocatedSize(const void* ptr) const;

  // Frees the blocks whose events have completed, then returns every region
  // with no block in use to the provider.
  void ReleaseCachedMemory();

  AllocatorStats stats() const;
  // Peaks restart from the current values.
  void ResetPeakStats();
  const CachingAllocatorOptions& options() const;

 private:
  class Impl;
  explicit CachingAllocator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_CACHING_ALLOCATOR_H_
