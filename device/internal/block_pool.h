// BlockPool: the bookkeeping of CachingAllocator: regions, the blocks they
// are cut into, the best-fit free set, splitting and coalescing. It never
// touches the memory it describes and never calls a provider.
//
// Not thread-safe: the allocator holds its lock around every call.
#ifndef SLUICE_DEVICE_INTERNAL_BLOCK_POOL_H_
#define SLUICE_DEVICE_INTERNAL_BLOCK_POOL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

namespace sluice::gpu_internal {

struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  size_t requested = 0;  // the caller's size while in use
  bool in_use = false;
  bool free_pending = false;  // in use, handed to CachingAllocator::FreeAfter
  uintptr_t stream = 0;       // the stream of the block's region
  Block* prev = nullptr;      // neighbours in address order, same region
  Block* next = nullptr;
};

class BlockPool {
 public:
  BlockPool() = default;
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Records a new region [base, base + size) as one free block, which is
  // returned (already out of the free set, ready for Split/MarkInUse).
  Block* AddRegion(char* base, size_t size, uintptr_t stream);
  // The smallest free block of `stream` with at least `size` bytes (lowest
  // address among equals), taken out of the free set; nullptr if none.
  Block* TakeBestFit(size_t size, uintptr_t stream);
  // Shrinks the taken block `b` to `size` bytes when at least
  // `min_remainder` bytes would be left; the rest becomes a free block
  // (merged with a free right neighbour).
  void Split(Block* b, size_t size, size_t min_remainder);
  void MarkInUse(Block* b, size_t requested);
  // The in-use block starting at `ptr`, or nullptr.
  Block* FindInUse(const void* ptr) const;
  // Marks `b` free, merges it with free neighbours and files the result in
  // the free set.
  void Release(Block* b);

  // Drops every region whose memory is all free, calling give_back(base,
  // size) for each; returns the bytes dropped.
  size_t RemoveFreeRegions(const std::function<void(char*, size_t)>& give_back);
  // Calls fn(base, size) for every region (for the allocator's destructor).
  void ForEachRegion(const std::function<void(char*, size_t)>& fn) const;

  size_t LargestFreeBlock() const;
  size_t num_regions() const { return regions_.size(); }
  size_t num_free_blocks() const { return free_.size(); }
  size_t num_in_use() const { return in_use_.size(); }

 private:
  struct Region {
    size_t size;
    Block* first;
  };
  // Free blocks ordered by (stream, size, address): best fit is a lower_bound.
  struct FreeOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  void Unlink(Block* b);  // from its region's list; deletes b

  std::set<Block*, FreeOrder> free_;
  std::unordered_map<const void*, Block*> in_use_;
  std::map<char*, Region> regions_;
};

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_INTERNAL_BLOCK_POOL_H_
