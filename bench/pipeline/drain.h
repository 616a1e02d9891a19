// Reading datasets to their end inside Google Benchmark loops: the one
// helper every pipeline_stage_bench file uses. An error skips the benchmark
// with the error's text (a benchmark that failed must not report a rate).
#ifndef SLUICE_BENCH_PIPELINE_DRAIN_H_
#define SLUICE_BENCH_PIPELINE_DRAIN_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>

#include "sluice/pipeline/dataset.h"

namespace sluice::bench {

// Reads `it` to its end: the number of elements, or nullopt after
// SkipWithError.
inline std::optional<int64_t> DrainIterator(benchmark::State& state, Iterator& it) {
  int64_t n = 0;
  for (;;) {
    Result<std::optional<Element>> e = it.next();
    if (!e.ok()) {
      state.SkipWithError(e.status().ToString().c_str());
      return std::nullopt;
    }
    if (!e->has_value()) return n;
    ++n;
  }
}

// Reads a fresh iterator of `ds` to its end.
inline std::optional<int64_t> DrainOnce(benchmark::State& state, const Dataset& ds) {
  Result<Iterator> it = ds.iterator();
  if (!it.ok()) {
    state.SkipWithError(it.status().ToString().c_str());
    return std::nullopt;
  }
  return DrainIterator(state, *it);
}

// DrainOnce in every benchmark iteration: the elements read in all, or
// nullopt after SkipWithError.
inline std::optional<int64_t> DrainEachIteration(benchmark::State& state, const Dataset& ds) {
  int64_t n = 0;
  for (auto _ : state) {
    std::optional<int64_t> once = DrainOnce(state, ds);
    if (!once) return std::nullopt;
    n += *once;
  }
  return n;
}

// A counter Google Benchmark shows as time per item: `count` items over the
// run ("ns_per_element" and the like).
inline benchmark::Counter TimePer(double count) {
  return benchmark::Counter(count, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace sluice::bench

#endif  // SLUICE_BENCH_PIPELINE_DRAIN_H_
