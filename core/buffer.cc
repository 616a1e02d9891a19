#include "sluice/core/buffer.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SLUICE_BUFFER_NO_RECYCLING 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SLUICE_BUFFER_NO_RECYCLING 1
#endif

namespace sluice {

// Allocated buffers keep this block in the first cache line of their own
// allocation, so one malloc serves both; wrapped buffers allocate it alone.
struct Buffer::Control : internal::BufferControl {
  size_t capacity = 0;  // > 0: an inline allocation of this many bytes
  std::function<void()> release;
};

namespace {
// The capacity that marks WrapDevice's control block.
constexpr size_t kDeviceMemory = ~size_t{0};
}  // namespace

struct Buffer::DeviceControl : Buffer::Control {
  Device device;
  std::shared_ptr<DeviceMemoryUses> uses;
};

const Buffer::DeviceControl* Buffer::AsDevice(const internal::BufferControl* base) {
  const auto* ctl = static_cast<const Control*>(base);
  return ctl != nullptr && ctl->capacity == kDeviceMemory ? static_cast<const DeviceControl*>(ctl)
                                                          : nullptr;
}

namespace {

// Large blocks are recycled. glibc serves them with a fresh mmap each time
// (its mmap threshold tops out at 32 MiB), which the kernel then zero-fills
// page by page on first touch: for batches of 128 224x224x3 float images
// (77 MB) that was over half the CPU time of the pipeline. Image-sized
// blocks (a 224x224x3 float image is 588 KiB) fare little better: glibc
// trims and re-faults its heaps, and page faults in resize/flip/normalize
// outputs were ~8% of an image pipeline's CPU time. A few freed blocks are
// kept for the next allocation of about the same size, as TensorFlow's and
// PyTorch's allocators do. Sanitizer builds skip this so use-after-free
// stays detectable.
constexpr size_t kRecycleMinBytes = size_t{256} << 10;
constexpr size_t kRecycleMaxCachedBytes = size_t{256} << 20;

class BlockRecycler {
 public:
  // A free block of capacity in [total, total + total / 8], or null.
  void* Take(size_t total, size_t* capacity) {
    std::lock_guard lock(mu_);
    auto it = free_.lower_bound(total);
    if (it == free_.end() || it->first > total + total / 8) return nullptr;
    *capacity = it->first;
    void* block = it->second;
    cached_ -= it->first;
    free_.erase(it);
    return block;
  }
  // Keeps `block` unless the cache is full; false if the caller must free it.
  bool Give(void* block, size_t capacity) {
    std::lock_guard lock(mu_);
    if (cached_ + capacity > kRecycleMaxCachedBytes) return false;
    free_.emplace(capacity, block);
    cached_ += capacity;
    return true;
  }

 private:
  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
};

// Never destroyed: buffers may be released during static destruction.
BlockRecycler& Recycler() {
  static auto* recycler = new BlockRecycler;
  return *recycler;
}

bool Recycles(size_t total) {
#ifdef SLUICE_BUFFER_NO_RECYCLING
  (void)total;
  (void)kRecycleMinBytes;
  return false;
#else
  return total >= kRecycleMinBytes;
#endif
}

}  // namespace

Result<Buffer> Buffer::Allocate(size_t size) {
  if (size > kMaxAllocation) {
    return Status::ResourceExhausted("cannot allocate a buffer of " + std::to_string(size) +
                                     " bytes (limit " + std::to_string(kMaxAllocation) + ")");
  }
  const size_t total = (kAlignment + size + kAlignment - 1) / kAlignment * kAlignment;
  size_t capacity = total;
  void* base = Recycles(total) ? Recycler().Take(total, &capacity) : nullptr;
  if (base == nullptr) {
    capacity = total;
    base = std::aligned_alloc(kAlignment, total);
  }
  if (base == nullptr) {
    return Status::ResourceExhausted("out of memory allocating a buffer of " +
                                     std::to_string(size) + " bytes");
  }
  static_assert(sizeof(Control) <= kAlignment, "control block must fit in the header line");
  auto* ctl = new (base) Control;
  ctl->data = static_cast<uint8_t*>(base) + kAlignment;
  ctl->size = size;
  ctl->capacity = capacity;
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

Buffer Buffer::WrapDevice(void* data, size_t size, std::function<void()> release,
                          const Device& device, std::shared_ptr<DeviceMemoryUses> uses) {
  auto* ctl = new DeviceControl;
  ctl->data = static_cast<uint8_t*>(data);
  ctl->size = size;
  ctl->capacity = kDeviceMemory;
  ctl->release = std::move(release);
  ctl->device = device;
  ctl->uses = std::move(uses);
  return Buffer(ctl);
}

Device Buffer::device() const {
  const DeviceControl* d = AsDevice(ctl_);
  return d != nullptr ? d->device : Device::Cpu();
}

DeviceMemoryUses* Buffer::device_uses() const {
  const DeviceControl* d = AsDevice(ctl_);
  return d != nullptr ? d->uses.get() : nullptr;
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
  if (ctl->capacity == kDeviceMemory) {
    auto* d = static_cast<DeviceControl*>(ctl);
    if (d->release) d->release();
    delete d;
  } else if (ctl->capacity > 0) {
    const size_t capacity = ctl->capacity;
    ctl->~Control();
    if (!Recycles(capacity) || !Recycler().Give(ctl, capacity)) std::free(ctl);
  } else {
    if (ctl->release) ctl->release();
    delete ctl;
  }
}

}  // namespace sluice
