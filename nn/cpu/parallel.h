// ParallelFor: splits [0, n) into one contiguous chunk per OpenMP thread
// (internal to the CPU backend).
//
// Small ranges run inline: waking a team costs a few microseconds, more
// than an elementwise pass over a few thousand floats. Chunks are fixed by
// (n, threads), so results that depend on the split (partial sums) are
// reproducible for a given thread count.
#ifndef SLUICE_NN_CPU_PARALLEL_H_
#define SLUICE_NN_CPU_PARALLEL_H_

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace sluice::nn::cpu {

// Elements below which a loop stays on the calling thread.
inline constexpr int64_t kParallelGrain = 1 << 15;

// How many chunks ParallelFor will use for `n` items of `cost` elements each.
inline int NumChunks(int64_t n, int threads, int64_t cost = 1) {
  if (threads <= 1 || n * cost < kParallelGrain) return 1;
  return static_cast<int>(std::min<int64_t>(threads, n));
}

// Calls fn(chunk, begin, end) for NumChunks(n, threads, cost) chunks.
template <typename Fn>
void ParallelFor(int64_t n, int threads, int64_t cost, Fn&& fn) {
  const int chunks = NumChunks(n, threads, cost);
  if (chunks == 1) {
    if (n > 0) fn(0, int64_t{0}, n);
    return;
  }
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    fn(c, n * c / chunks, n * (c + 1) / chunks);
  }
}

}  // namespace sluice::nn::cpu

#endif  // SLUICE_NN_CPU_PARALLEL_H_
