// AllocatorStats: a snapshot of a caching allocator's counters.
//
// Byte counts are of blocks as the allocator sizes them (requests rounded up
// to its alignment), except requested_bytes_in_use. A plain value type.
#ifndef SLUICE_DEVICE_ALLOCATOR_STATS_H_
#define SLUICE_DEVICE_ALLOCATOR_STATS_H_

#include <cstdint>
#include <string>

namespace sluice::gpu {

struct AllocatorStats {
  int64_t bytes_in_use = 0;            // in blocks handed out and not yet freed
  int64_t requested_bytes_in_use = 0;  // what the callers asked for, unrounded
  int64_t peak_bytes_in_use = 0;       // since creation or ResetPeakStats()
  int64_t bytes_reserved = 0;          // held from the provider: in use + cached
  int64_t peak_bytes_reserved = 0;
  int64_t bytes_cached = 0;        // reserved but free, ready for reuse
  int64_t largest_free_block = 0;  // the biggest request servable without a new region
  int64_t memory_limit = 0;        // 0: grow on demand
  int64_t num_allocs = 0;          // successful Allocate calls
  int64_t num_frees = 0;
  int64_t cache_hits = 0;         // allocations served without calling the provider
  int64_t num_region_allocs = 0;  // calls to the provider (cudaMalloc, cudaHostAlloc)
  int64_t num_region_frees = 0;
  int64_t num_regions = 0;    // regions held now
  int64_t num_ooms = 0;       // Allocate calls answered ResourceExhausted
  int64_t pending_frees = 0;  // FreeAfter blocks waiting for their events

  // One line: "in use 3.0 MiB (peak 4.0 MiB), reserved 4.0 MiB, ...".
  std::string ToString() const;
};

// "512 B", "3.0 KiB", "1.5 GiB".
std::string FormatBytes(int64_t bytes);

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_ALLOCATOR_STATS_H_
