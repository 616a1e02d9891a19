#include "sluice/device/allocator_stats.h"

#include <fmt/format.h>

namespace sluice::gpu {

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024 && bytes > -1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while ((v >= 1024 || v <= -1024) && unit < 3) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string AllocatorStats::ToString() const {
  return fmt::format(
      "in use {} (peak {}), reserved {} (peak {}), cached {}, largest free block {}, limit {}, "
      "{} allocs, {} frees ({} pending), {} cache hits, {} region allocs, {} region frees, {} "
      "regions, "
      "{} OOMs",
      FormatBytes(bytes_in_use), FormatBytes(peak_bytes_in_use), FormatBytes(bytes_reserved),
      FormatBytes(peak_bytes_reserved), FormatBytes(bytes_cached), FormatBytes(largest_free_block),
      memory_limit == 0 ? std::string("none (grow on demand)") : FormatBytes(memory_limit),
      num_allocs, num_frees, pending_frees, cache_hits, num_region_allocs, num_region_frees,
      num_regions, num_ooms);
}

}  // namespace sluice::gpu
