#include "sluice/device/caching_allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "sluice/device/internal/block_pool.h"
#include "sluice/device/stream.h"

namespace sluice::gpu {
namespace {

// Larger requests are refused before any arithmetic can overflow.
constexpr size_t kMaxRequest = size_t{1} << 48;

size_t RoundUp(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

bool IsPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

std::string Bytes(size_t n) {
  return fmt::format("{} ({} bytes)", FormatBytes(static_cast<int64_t>(n)), n);
}

Status CheckOptions(const CachingAllocatorOptions& o) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("CachingAllocator '{}': {}", o.name, why));
  };
  if (!IsPowerOfTwo(o.alignment) || o.alignment < 16) {
    return bad(fmt::format("alignment {} is not a power of two >= 16", o.alignment));
  }
  if (o.small_region == 0 || o.small_region % o.alignment != 0 || o.small_size % o.alignment != 0 ||
      o.small_size > o.small_region) {
    return bad(
        fmt::format("small_size {} and small_region {} must be multiples of the "
                    "alignment {} with small_size <= small_region",
                    o.small_size, o.small_region, o.alignment));
  }
  if (o.large_granularity == 0 || o.large_granularity % o.alignment != 0) {
    return bad(fmt::format("large_granularity {} is not a positive multiple of the alignment {}",
                           o.large_granularity, o.alignment));
  }
  return Status::OK();
}

}  // namespace

class CachingAllocator::Impl {
 public:
  Impl(std::unique_ptr<RegionProvider> provider, CachingAllocatorOptions options)
      : provider_(std::move(provider)), options_(std::move(options)) {}

  ~Impl() {
    pool_.ForEachRegion([&](char* base, size_t size) { provider_->Free(base, size); });
  }

  Result<void*> Allocate(size_t bytes, StreamId stream) {
    bytes = std::max<size_t>(bytes, 1);
    std::unique_lock lock(mu_);
    FreeCompletedLocked();
    if (bytes > kMaxRequest) return OutOfMemory(bytes, stream, Status());
    const size_t size = RoundUp(bytes, options_.alignment);
    gpu_internal::Block* b = pool_.TakeBestFit(size, stream);
    if (b != nullptr) {
      ++cache_hits_;
    } else {
      Result<gpu_internal::Block*> grown = Grow(bytes, size, stream, lock);
      if (!grown.ok()) return grown.status();
      b = *grown;
    }
    pool_.Split(b, size, options_.alignment);
    pool_.MarkInUse(b, bytes);
    in_use_ += b->size;
    requested_in_use_ += bytes;
    peak_in_use_ = std::max(peak_in_use_, in_use_);
    ++num_allocs_;
    return static_cast<void*>(b->ptr);
  }

  Status Free(void* ptr) {
    std::lock_guard lock(mu_);
    gpu_internal::Block* b = pool_.FindInUse(ptr);
    if (b == nullptr || b->free_pending) return NotLive("Free", ptr);
    ReleaseBlockLocked(b);
    return Status::OK();
  }

  Status FreeAfter(void* ptr, std::vector<std::shared_ptr<Event>> events) {
    std::lock_guard lock(mu_);
    gpu_internal::Block* b = pool_.FindInUse(ptr);
    if (b == nullptr || b->free_pending) return NotLive("FreeAfter", ptr);
    std::erase(events, nullptr);
    if (events.empty()) {
      ReleaseBlockLocked(b);
    } else {
      b->free_pending = true;
      pending_.push_back(PendingFree{b, std::move(events)});
    }
    return Status::OK();
  }

  Result<size_t> AllocatedSize(const void* ptr) const {
    std::lock_guard lock(mu_);
    const gpu_internal::Block* b = pool_.FindInUse(ptr);
    if (b == nullptr) return NotLive("AllocatedSize", ptr);
    return b->size;
  }

  void ReleaseCachedMemory() {
    std::lock_guard lock(mu_);
    FreeCompletedLocked();
    ReleaseLocked();
  }

  AllocatorStats stats() const {
    std::lock_guard lock(mu_);
    AllocatorStats s;
    s.bytes_in_use = static_cast<int64_t>(in_use_);
    s.requested_bytes_in_use = static_cast<int64_t>(requested_in_use_);
    s.peak_bytes_in_use = static_cast<int64_t>(peak_in_use_);
    s.bytes_reserved = static_cast<int64_t>(reserved_);
    s.peak_bytes_reserved = static_cast<int64_t>(peak_reserved_);
    s.bytes_cached = static_cast<int64_t>(reserved_ - in_use_);
    s.largest_free_block = static_cast<int64_t>(pool_.LargestFreeBlock());
    s.memory_limit = static_cast<int64_t>(options_.memory_limit);
    s.num_allocs = num_allocs_;
    s.num_frees = num_frees_;
    s.cache_hits = cache_hits_;
    s.num_region_allocs = num_region_allocs_;
    s.num_region_frees = num_region_frees_;
    s.num_regions = static_cast<int64_t>(pool_.num_regions());
    s.num_ooms = num_ooms_;
    s.pending_frees = static_cast<int64_t>(pending_.size());
    return s;
  }

  void ResetPeakStats() {
    std::lock_guard lock(mu_);
    peak_in_use_ = in_use_;
    peak_reserved_ = reserved_;
  }

  const CachingAllocatorOptions& options() const { return options_; }

 private:
  // Reserves a region for a request of `size` (rounded) bytes: first the
  // preferred region size, then exactly `size`; if neither fits under the
  // limit or the provider is out of memory, returns every free region and
  // tries once more.
  Result<gpu_internal::Block*> Grow(size_t bytes, size_t size, StreamId stream,
                                    std::unique_lock<std::mutex>& lock, bool waited = false) {
    const size_t preferred = size <= options_.small_size
                                 ? options_.small_region
                                 : RoundUp(size, options_.large_granularity);
    const size_t candidates[] = {preferred, size};
    const int num_candidates = preferred == size ? 1 : 2;
    Status provider_error;
    for (int attempt = 0; attempt < 2; ++attempt) {
      for (int c = 0; c < num_candidates; ++c) {
        const size_t want = candidates[c];
        if (options_.memory_limit != 0 && reserved_ + want > options_.memory_limit) continue;
        Result<void*> region = provider_->Allocate(want);
        if (region.ok()) {
          reserved_ += want;
          peak_reserved_ = std::max(peak_reserved_, reserved_);
          ++num_region_allocs_;
          return pool_.AddRegion(static_cast<char*>(*region), want, stream);
        }
        if (region.status().code() != StatusCode::kResourceExhausted) {
          return region.status().WithContext(fmt::format("{}: reserving a region of {} from {}",
                                                         options_.name, Bytes(want),
                                                         provider_->name()));
        }
        provider_error = region.status();
      }
      if (attempt == 0 && ReleaseLocked() == 0) break;
    }
    // Blocks waiting for other streams may be all that is missing: wait for
    // their events without the lock (the work may free memory here), then
    // try once more.
    if (!pending_.empty() && !waited) {
      std::vector<std::shared_ptr<Event>> events;
      for (const PendingFree& p : pending_)
        events.insert(events.end(), p.events.begin(), p.events.end());
      lock.unlock();
      for (const std::shared_ptr<Event>& e : events) (void)e->Synchronize();  // errors: work over
      lock.lock();
      if (FreeCompletedLocked() > 0) {
        if (gpu_internal::Block* b = pool_.TakeBestFit(size, stream)) return b;
        return Grow(bytes, size, stream, lock, /*waited=*/true);
      }
    }
    return OutOfMemory(bytes, stream, provider_error);
  }

  // A FreeAfter block and the events it waits for.
  struct PendingFree {
    gpu_internal::Block* block;
    std::vector<std::shared_ptr<Event>> events;
  };

  void ReleaseBlockLocked(gpu_internal::Block* b) {
    b->free_pending = false;
    in_use_ -= b->size;
    requested_in_use_ -= b->requested;
    ++num_frees_;
    pool_.Release(b);
  }

  // Frees the pending blocks whose events have all completed (a failed
  // query counts: the work is over); returns how many.
  size_t FreeCompletedLocked() {
    size_t freed = 0;
    for (auto it = pending_.begin(); it != pending_.end();) {
      const bool done = std::all_of(it->events.begin(), it->events.end(), [](const auto& e) {
        Result<bool> r = e->Query();
        return !r.ok() || *r;
      });
      if (!done) {
        ++it;
        continue;
      }
      ReleaseBlockLocked(it->block);
      it = pending_.erase(it);
      ++freed;
    }
    return freed;
  }

  size_t ReleaseLocked() {
    const size_t dropped = pool_.RemoveFreeRegions([&](char* base, size_t size) {
      provider_->Free(base, size);
      ++num_region_frees_;
    });
    reserved_ -= dropped;
    return dropped;
  }

  Status OutOfMemory(size_t bytes, StreamId stream, const Status& provider_error) {
    ++num_ooms_;
    std::string limit = options_.memory_limit == 0 ? std::string("none (grow on demand)")
                                                   : Bytes(options_.memory_limit);
    std::string msg = fmt::format(
        "{}: cannot allocate {} on stream {:#x}: memory limit {}, in use {}, reserved {}, "
        "largest free block {}",
        options_.name, Bytes(bytes), stream, limit, Bytes(in_use_), Bytes(reserved_),
        Bytes(pool_.LargestFreeBlock()));
    if (!provider_error.ok()) msg += fmt::format("; {}", provider_error.message());
    return Status::ResourceExhausted(msg);
  }

  Status NotLive(std::string_view what, const void* ptr) const {
    return Status::InvalidArgument(fmt::format(
        "{}: {}({}): not a live block of this allocator (freed twice, or never returned by it)",
        options_.name, what, ptr));
  }

  const std::unique_ptr<RegionProvider> provider_;
  const CachingAllocatorOptions options_;
  mutable std::mutex mu_;
  gpu_internal::BlockPool pool_;
  size_t in_use_ = 0;
  size_t requested_in_use_ = 0;
  size_t peak_in_use_ = 0;
  size_t reserved_ = 0;
  size_t peak_reserved_ = 0;
  int64_t num_allocs_ = 0;
  int64_t num_frees_ = 0;
  int64_t cache_hits_ = 0;
  int64_t num_region_allocs_ = 0;
  int64_t num_region_frees_ = 0;
  int64_t num_ooms_ = 0;
  std::vector<PendingFree> pending_;  // in FreeAfter order
};

Result<std::unique_ptr<CachingAllocator>> CachingAllocator::Create(
    std::unique_ptr<RegionProvider> provider, CachingAllocatorOptions options) {
  if (provider == nullptr) {
    return Status::InvalidArgument(
        fmt::format("CachingAllocator '{}': the region provider is null", options.name));
  }
  SLUICE_RETURN_IF_ERROR(CheckOptions(options));
  return std::unique_ptr<CachingAllocator>(
      new CachingAllocator(std::make_unique<Impl>(std::move(provider), std::move(options))));
}

CachingAllocator::CachingAllocator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CachingAllocator::~CachingAllocator() = default;

Result<void*> CachingAllocator::Allocate(size_t bytes, StreamId stream) {
  return impl_->Allocate(bytes, stream);
}
Status CachingAllocator::Free(void* ptr) { return impl_->Free(ptr); }
Status CachingAllocator::FreeAfter(void* ptr, std::vector<std::shared_ptr<Event>> events) {
  return impl_->FreeAfter(ptr, std::move(events));
}
Result<size_t> CachingAllocator::AllocatedSize(const void* ptr) const {
  return impl_->AllocatedSize(ptr);
}
void CachingAllocator::ReleaseCachedMemory() { impl_->ReleaseCachedMemory(); }
AllocatorStats CachingAllocator::stats() const { return impl_->stats(); }
void CachingAllocator::ResetPeakStats() { impl_->ResetPeakStats(); }
const CachingAllocatorOptions& CachingAllocator::options() const { return impl_->options(); }

}  // namespace sluice::gpu
