// Buffer: a reference-counted block of bytes.
//
// Copies of a Buffer share the same bytes; the bytes are freed when the last
// copy goes away. Buffers made by Allocate() are 64-byte aligned (a cache
// line, and enough for any SIMD load). Wrap() adopts memory owned elsewhere
// (a read buffer, an mmap) and calls a release function when the last
// reference drops. Freed allocations of 256 KiB or more are recycled for
// the next allocation of about the same size (up to 256 MiB of free blocks
// per process; not in sanitizer builds): fresh large blocks come from mmap
// and are zero-filled by the kernel on first touch, which dominated
// batching and cost image kernels ~8% of their time.
//
// Where the bytes live: host memory (cpu:0) for every Buffer but those made
// by WrapDevice, which adopts a device's memory (a GPU's, or host memory
// standing in for one) with the device it is on and its owner's record of
// its use (DeviceMemoryUses, for the device runtime). Host code must never
// read or write the bytes of a Buffer whose device() is a GPU.
//
// Thread-safety: the reference count is atomic, so copies may be made and
// destroyed on different threads. The bytes themselves are not synchronized:
// write them before sharing the buffer, or synchronize yourself.
#ifndef SLUICE_CORE_BUFFER_H_
#define SLUICE_CORE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "sluice/core/device.h"
#include "sluice/core/result.h"

namespace sluice {

namespace internal {
// The start of every Buffer's control block, visible so that the accessors
// below inline. The rest (how to free the bytes) is private to buffer.cc.
struct BufferControl {
  std::atomic<long> refs{1};
  uint8_t* data = nullptr;
  size_t size = 0;
};
}  // namespace internal

class Buffer {
 public:
  static constexpr size_t kAlignment = 64;
  // Largest single allocation Allocate() attempts; bigger requests are
  // ResourceExhausted without touching the allocator.
  static constexpr size_t kMaxAllocation = size_t{1} << 40;

  // A null buffer: data() == nullptr, size() == 0.
  Buffer() = default;

  // `size` uninitialized bytes, 64-byte aligned. ResourceExhausted (naming
  // the size) if the allocation fails or exceeds kMaxAllocation.
  static Result<Buffer> Allocate(size_t size);
  // As Allocate(), zero-filled.
  static Result<Buffer> AllocateZeroed(size_t size);
  // Adopts [data, data + size); `release` runs once, when the last reference
  // is dropped (it may be empty for memory that outlives every Buffer).
  static Buffer Wrap(void* data, size_t size, std::function<void()> release);
  // As Wrap, for `size` bytes of `device`'s memory; `uses` (may be null) is
  // the memory owner's record of its use, kept as long as the bytes.
  static Buffer WrapDevice(void* data, size_t size, std::function<void()> release,
                           const Device& device, std::shared_ptr<DeviceMemoryUses> uses);

  Buffer(const Buffer& other) noexcept : ctl_(other.ctl_) {
    if (ctl_) ctl_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Buffer& operator=(const Buffer& other) noexcept;
  Buffer(Buffer&& other) noexcept : ctl_(other.ctl_) { other.ctl_ = nullptr; }
  Buffer& operator=(Buffer&& other) noexcept;
  ~Buffer() { Unref(); }

  uint8_t* data() const { return ctl_ ? ctl_->data : nullptr; }
  size_t size() const { return ctl_ ? ctl_->size : 0; }
  explicit operator bool() const { return ctl_ != nullptr; }
  // cpu:0 for host memory (and a null buffer); WrapDevice's device else.
  Device device() const;
  // WrapDevice's `uses`; null for every other buffer.
  DeviceMemoryUses* device_uses() const;

  // Number of Buffer objects sharing these bytes (0 for a null buffer). A
  // snapshot: other threads may change it at any time.
  long use_count() const { return ctl_ ? ctl_->refs.load(std::memory_order_acquire) : 0; }
  // use_count() == 1: nobody else can observe a write to the bytes.
  bool unique() const { return use_count() == 1; }
  // True if both hold the same allocation (the same reference count): a
  // view of one keeps the other's bytes alive. False if either is null.
  bool SameAllocation(const Buffer& other) const { return ctl_ != nullptr && ctl_ == other.ctl_; }

 private:
  struct Control;        // derives from internal::BufferControl
  struct DeviceControl;  // WrapDevice's: a Control with the device
  static const DeviceControl* AsDevice(const internal::BufferControl* ctl);
  explicit Buffer(internal::BufferControl* ctl) : ctl_(ctl) {}
  void Unref() {
    if (ctl_ && ctl_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) Free(ctl_);
    ctl_ = nullptr;
  }
  static void Free(internal::BufferControl* ctl);

  internal::BufferControl* ctl_ = nullptr;
};

}  // namespace sluice

#endif  // SLUICE_CORE_BUFFER_H_
