// NewHostRegionProvider: regions from the C++ heap, with an optional
// capacity so that it runs out as a device of that size would.
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <new>

#include "sluice/device/allocator_stats.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu {
namespace {

constexpr size_t kRegionAlignment = 256;

class HostRegionProvider final : public RegionProvider {
 public:
  explicit HostRegionProvider(size_t capacity) : capacity_(capacity) {}

  Result<void*> Allocate(size_t bytes) override {
    std::lock_guard lock(mu_);
    if (capacity_ != 0 && (bytes > capacity_ || out_ > capacity_ - bytes)) {
      return Status::ResourceExhausted(
          fmt::format("{}: {} more bytes would exceed its capacity of {} ({} already out)", name(),
                      bytes, FormatBytes(static_cast<int64_t>(capacity_)), out_));
    }
    void* p = ::operator new(bytes, std::align_val_t(kRegionAlignment), std::nothrow);
    if (p == nullptr) {
      return Status::ResourceExhausted(
          fmt::format("{}: out of memory for {} bytes", name(), bytes));
    }
    out_ += bytes;
    return p;
  }

  void Free(void* region, size_t bytes) override {
    ::operator delete(region, std::align_val_t(kRegionAlignment));
    std::lock_guard lock(mu_);
    out_ -= bytes;
  }

  std::string name() const override { return "host"; }

 private:
  const size_t capacity_;
  std::mutex mu_;
  size_t out_ = 0;
};

}  // namespace

std::unique_ptr<RegionProvider> NewHostRegionProvider(size_t capacity) {
  return std::make_unique<HostRegionProvider>(capacity);
}

}  // namespace sluice::gpu
