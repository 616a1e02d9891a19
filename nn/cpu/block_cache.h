// BlockCache: recycles the CPU backend's large tensor blocks (internal to the
// CPU backend).
//
// A training step allocates the same activation and gradient sizes every
// step. Fresh multi-megabyte blocks come from mmap and are zero-filled by
// the kernel page by page on first touch, which cost a fifth of the CNN
// step in profiles; recycling them (as TensorFlow's BFC allocator and
// PyTorch's caching allocator do) removes that. Blocks below kMinBytes go
// to malloc, which reuses them well.
//
// Thread-safety: Get() and the release of its buffers may run on any
// thread. The cache lives as long as any buffer it handed out.
#ifndef SLUICE_NN_CPU_BLOCK_CACHE_H_
#define SLUICE_NN_CPU_BLOCK_CACHE_H_

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "sluice/core/buffer.h"
#include "sluice/core/result.h"

namespace sluice::nn::cpu {

class BlockCache : public std::enable_shared_from_this<BlockCache> {
 public:
  static constexpr size_t kMinBytes = size_t{256} << 10;

  // Keeps at most `max_cached_bytes` of free blocks; more are freed.
  static std::shared_ptr<BlockCache> Create(size_t max_cached_bytes);

  // A 64-byte-aligned buffer of `size` bytes (uninitialized), recycled
  // when the last reference to it drops. ResourceExhausted if it cannot be
  // allocated.
  Result<Buffer> Get(size_t size);

  struct Stats {
    size_t cached_bytes = 0;  // free blocks held now
    size_t hits = 0;          // Get() served from the cache
    size_t misses = 0;        // Get() that allocated
  };
  Stats stats() const;

  ~BlockCache();

 private:
  explicit BlockCache(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}
  void Put(void* block, size_t capacity);

  const size_t max_cached_bytes_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // capacity -> block
  Stats stats_;
};

}  // namespace sluice::nn::cpu

#endif  // SLUICE_NN_CPU_BLOCK_CACHE_H_
