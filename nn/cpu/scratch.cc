#include "sluice/nn/cpu/scratch.h"

#include <cstdlib>
#include <memory>

namespace sluice::nn::cpu {
namespace {

struct Freer {
  void operator()(void* p) const { std::free(p); }
};

struct Slot {
  std::unique_ptr<void, Freer> data;
  size_t size = 0;
};

}  // namespace

void* ThreadScratch(ScratchSlot slot, size_t bytes) {
  thread_local Slot slots[static_cast<int>(ScratchSlot::kCount)];
  Slot& s = slots[static_cast<int>(slot)];
  if (bytes > s.size) {
    // Round up so a slowly growing request does not reallocate each time.
    const size_t size = (bytes + bytes / 4 + 63) / 64 * 64;
    s.data.reset(std::aligned_alloc(64, size));
    s.size = s.data ? size : 0;
  }
  return s.data.get();
}

}  // namespace sluice::nn::cpu
