#include "sluice/core/buffer.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace sluice {

// Allocated buffers keep this block in the first cache line of their own
// allocation, so one malloc serves both; wrapped buffers allocate it alone.
struct Buffer::Control {
  std::atomic<long> refs{1};
  uint8_t* data = nullptr;
  size_t size = 0;
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

Buffer::Buffer(const Buffer& other) noexcept : ctl_(other.ctl_) {
  if (ctl_) ctl_->refs.fetch_add(1, std::memory_order_relaxed);
}

Buffer& Buffer::operator=(const Buffer& other) noexcept {
  Control* incoming = other.ctl_;  // read first: `other` may alias *this
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

uint8_t* Buffer::data() const { return ctl_ ? ctl_->data : nullptr; }
size_t Buffer::size() const { return ctl_ ? ctl_->size : 0; }
long Buffer::use_count() const { return ctl_ ? ctl_->refs.load(std::memory_order_acquire) : 0; }

void Buffer::Unref() {
  if (ctl_ == nullptr) return;
  if (ctl_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (ctl_->inline_alloc) {
      ctl_->~Control();
      std::free(ctl_);
    } else {
      if (ctl_->release) ctl_->release();
      delete ctl_;
    }
  }
  ctl_ = nullptr;
}

}  // namespace sluice
