// Timing helpers of the bench programs: wall time since a moment, the CPU
// time of the process or of the calling thread, the median of samples.
// Header-only and standard C++ (with POSIX clocks), for programs that link
// nothing of sluice's. Thread-safe: no shared state.
#ifndef SLUICE_BENCH_COMMON_TIMING_H_
#define SLUICE_BENCH_COMMON_TIMING_H_

#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace sluice::bench {

using Clock = std::chrono::steady_clock;

// Seconds from `t0` to now.
inline double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds (user + system) used so far by the whole process, or by the
// calling thread.
inline double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The middle sample (the upper one of the two middles for an even count).
// REQUIRES: !samples.empty().
inline double Median(std::vector<double> samples) {
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

}  // namespace sluice::bench

#endif  // SLUICE_BENCH_COMMON_TIMING_H_
