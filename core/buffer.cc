#include "sluice/core/buffer.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace sluice {

// Allocated buffers keep this block in the first cache line of their own
// allocation, so one malloc serves both; wrapped buffers allocate it alone.
struct Buffer::Control : internal::BufferControl {
  bool inline_alloc = false;
  std::function<void()> release;
};

Result<Buffer> Buffer::Allocate(size_t size) {
  if (size > kMaxAllocation) {
    return Status::ResourceExhausted("cannot allocate a buffer of " + std::to_string(size) +
                                     " bytes (limit " + std::to_string(kMaxAllocation) + ")");
  }
  const size_t total = (kAlignment + size + kAlignment - 1) / kAlignment * kAlignment;
  void* base = std::aligned_alloc(kAlignment, total);
  if (base == nullptr) {
    return Status::ResourceExhausted("out of memory allocating a buffer of " +
                                     std::to_string(size) + " bytes");
  }
  static_assert(sizeof(Control) <= kAlignment, "control block must fit in the header line");
  auto* ctl = new (base) Control;
  ctl->data = static_cast<uint8_t*>(base) + kAlignment;
  ctl->size = size;
  ctl->inline_alloc = true;
  return Buffer(ctl);
}

Result<Buffer> Buffer::AllocateZeroed(size_t size) {
  Result<Buffer> b = Allocate(size);
  if (b.ok() && size > 0) std::memset(b->data(), 0, size);
  return b;
}

Buffer Buffer::Wrap(void* data, size_t size, std::function<void()> release) {
  auto* ctl = new Control;
  ctl->data = static_cast<uint8_t*>(data);
  ctl->size = size;
  ctl->release = std::move(release);
  return Buffer(ctl);
}

Buffer& Buffer::operator=(const Buffer& other) noexcept {
  internal::BufferControl* incoming = other.ctl_;  // read first: `other` may alias *this
  if (incoming) incoming->refs.fetch_add(1, std::memory_order_relaxed);
  Unref();
  ctl_ = incoming;
  return *this;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Unref();
    ctl_ = other.ctl_;
    other.ctl_ = nullptr;
  }
  return *this;
}

void Buffer::Free(internal::BufferControl* base) {
  auto* ctl = static_cast<Control*>(base);
  if (ctl->inline_alloc) {
    ctl->~Control();
    std::free(ctl);
  } else {
    if (ctl->release) ctl->release();
    delete ctl;
  }
}

}  // namespace sluice
