// The counters behind GetRemoteStats() (core/remote.h), bumped by the
// object-store file systems. Relaxed atomics: totals, not a timeline.
#ifndef SLUICE_CORE_INTERNAL_REMOTE_COUNTERS_H_
#define SLUICE_CORE_INTERNAL_REMOTE_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace sluice::internal {

struct RemoteCounters {
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> bytes_read{0};
  std::atomic<int64_t> retries{0};
  std::atomic<int64_t> throttled{0};
  std::atomic<int64_t> timeouts{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> files_opened{0};
};

RemoteCounters& TheRemoteCounters();

inline void Bump(std::atomic<int64_t>& counter, int64_t by = 1) {
  counter.fetch_add(by, std::memory_order_relaxed);
}

}  // namespace sluice::internal

#endif  // SLUICE_CORE_INTERNAL_REMOTE_COUNTERS_H_
