#include "sluice/nn/cpu/block_cache.h"

#include <cstdlib>
#include <string>

namespace sluice::nn::cpu {

std::shared_ptr<BlockCache> BlockCache::Create(size_t max_cached_bytes) {
  return std::shared_ptr<BlockCache>(new BlockCache(max_cached_bytes));
}

BlockCache::~BlockCache() {
  for (auto& [capacity, block] : free_) std::free(block);
}

Result<Buffer> BlockCache::Get(size_t size) {
  if (size < kMinBytes) return Buffer::Allocate(size);
  // Capacities are multiples of 64 KiB; take a free block at most 1/8
  // larger than asked, so big blocks are not spent on small requests.
  constexpr size_t kGranule = size_t{64} << 10;
  const size_t capacity = (size + kGranule - 1) / kGranule * kGranule;
  void* block = nullptr;
  size_t got = capacity;
  {
    std::lock_guard lock(mu_);
    auto it = free_.lower_bound(capacity);
    if (it != free_.end() && it->first <= capacity + capacity / 8) {
      got = it->first;
      block = it->second;
      stats_.cached_bytes -= got;
      free_.erase(it);
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
  }
  if (block == nullptr) {
    if (capacity > Buffer::kMaxAllocation ||
        (block = std::aligned_alloc(Buffer::kAlignment, capacity)) == nullptr) {
      return Status::ResourceExhausted("cpu backend: cannot allocate " + std::to_string(size) +
                                       " bytes");
    }
  }
  std::shared_ptr<BlockCache> self = shared_from_this();
  return Buffer::Wrap(block, size, [self, block, got] { self->Put(block, got); });
}

void BlockCache::Put(void* block, size_t capacity) {
  {
    std::lock_guard lock(mu_);
    if (stats_.cached_bytes + capacity <= max_cached_bytes_) {
      free_.emplace(capacity, block);
      stats_.cached_bytes += capacity;
      return;
    }
  }
  std::free(block);
}

BlockCache::Stats BlockCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace sluice::nn::cpu
