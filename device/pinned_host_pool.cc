#include "sluice/device/pinned_host_pool.h"

#include <utility>

namespace sluice::gpu {

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : pool_(std::move(other.pool_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = std::move(other.pool_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PinnedBuffer::Reset() {
  if (data_ != nullptr) (void)pool_->Free(data_);  // cannot fail: data_ is a live block
  data_ = nullptr;
  size_ = 0;
  pool_.reset();
}

CachingAllocatorOptions PinnedHostPool::DefaultOptions() {
  return CachingAllocatorOptions{.name = "pinned host"};
}

Result<PinnedHostPool> PinnedHostPool::Create(CachingAllocatorOptions options) {
  return CreateWithProvider(NewCudaPinnedRegionProvider(), std::move(options));
}

Result<PinnedHostPool> PinnedHostPool::CreateWithProvider(std::unique_ptr<RegionProvider> provider,
                                                          CachingAllocatorOptions options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<CachingAllocator> allocator,
                          CachingAllocator::Create(std::move(provider), std::move(options)));
  return PinnedHostPool(std::shared_ptr<CachingAllocator>(std::move(allocator)));
}

Result<PinnedBuffer> PinnedHostPool::Acquire(size_t bytes) {
  SLUICE_ASSIGN_OR_RETURN(void* data, allocator_->Allocate(bytes));
  return PinnedBuffer(allocator_, data, bytes);
}

AllocatorStats PinnedHostPool::stats() const { return allocator_->stats(); }
void PinnedHostPool::ResetPeakStats() { allocator_->ResetPeakStats(); }
void PinnedHostPool::ReleaseCachedMemory() { allocator_->ReleaseCachedMemory(); }

}  // namespace sluice::gpu
