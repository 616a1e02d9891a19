#include "sluice/device/internal/block_pool.h"

#include <algorithm>
#include <tuple>

namespace sluice::gpu_internal {

bool BlockPool::FreeOrder::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

BlockPool::~BlockPool() {
  for (auto& [base, region] : regions_) {
    Block* b = region.first;
    while (b != nullptr) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

Block* BlockPool::AddRegion(char* base, size_t size, uintptr_t stream) {
  auto* b = new Block{.ptr = base, .size = size, .stream = stream};
  regions_.emplace(base, Region{size, b});
  return b;
}

Block* BlockPool::TakeBestFit(size_t size, uintptr_t stream) {
  Block probe{.ptr = nullptr, .size = size, .stream = stream};
  auto it = free_.lower_bound(&probe);
  if (it == free_.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  free_.erase(it);
  return b;
}

void BlockPool::Split(Block* b, size_t size, size_t min_remainder) {
  if (b->size < size || b->size - size < min_remainder) return;
  auto* rest = new Block{.ptr = b->ptr + size, .size = b->size - size, .stream = b->stream};
  rest->prev = b;
  rest->next = b->next;
  if (b->next != nullptr) b->next->prev = rest;
  b->next = rest;
  b->size = size;
  // `b` is taken but not yet in use: merge the remainder rightwards only.
  if (Block* next = rest->next; next != nullptr && !next->in_use) {
    free_.erase(next);
    rest->size += next->size;
    Unlink(next);
  }
  free_.insert(rest);
}

void BlockPool::MarkInUse(Block* b, size_t requested) {
  b->in_use = true;
  b->requested = requested;
  in_use_.emplace(b->ptr, b);
}

Block* BlockPool::FindInUse(const void* ptr) const {
  auto it = in_use_.find(ptr);
  return it == in_use_.end() ? nullptr : it->second;
}

void BlockPool::Unlink(Block* b) {
  if (b->prev != nullptr) b->prev->next = b->next;
  if (b->next != nullptr) b->next->prev = b->prev;
  delete b;
}

void BlockPool::Release(Block* b) {
  if (b->in_use) {
    in_use_.erase(b->ptr);
    b->in_use = false;
    b->requested = 0;
  }
  // Absorb a free right neighbour, then let a free left neighbour absorb b.
  if (Block* next = b->next; next != nullptr && !next->in_use) {
    free_.erase(next);
    b->size += next->size;
    Unlink(next);
  }
  if (Block* prev = b->prev; prev != nullptr && !prev->in_use) {
    free_.erase(prev);
    prev->size += b->size;
    Unlink(b);
    b = prev;
  }
  free_.insert(b);
}

size_t BlockPool::RemoveFreeRegions(const std::function<void(char*, size_t)>& give_back) {
  size_t dropped = 0;
  for (auto it = regions_.begin(); it != regions_.end();) {
    Block* b = it->second.first;
    if (b->in_use || b->next != nullptr) {
      ++it;
      continue;
    }
    free_.erase(b);
    delete b;
    give_back(it->first, it->second.size);
    dropped += it->second.size;
    it = regions_.erase(it);
  }
  return dropped;
}

void BlockPool::ForEachRegion(const std::function<void(char*, size_t)>& fn) const {
  for (const auto& [base, region] : regions_) fn(base, region.size);
}

size_t BlockPool::LargestFreeBlock() const {
  size_t largest = 0;
  for (const Block* b : free_) largest = std::max(largest, b->size);
  return largest;
}

}  // namespace sluice::gpu_internal
