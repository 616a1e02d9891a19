// Mixing datasets: sample_from_datasets over 8 range inputs against reading
// the same 8 inputs interleaved round robin (interleave over range(8),
// cycle_length 8, block_length 1) in the same run; the target is at
// most 5% over the interleave. choose_from_datasets with a round-robin
// choice dataset is the deterministic mixture's cost. BM_Mix_global_shuffle_*:
// the cost of the mixture's random access.
#include <benchmark/benchmark.h>

#include "drain.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kInputs = 8;
constexpr int64_t kPer = 25'000;  // 200,000 elements in all, like BM_Source

void DrainMix(benchmark::State& state, const Dataset& ds) {
  std::optional<int64_t> n = bench::DrainEachIteration(state, ds);
  if (!n) return;
  state.SetItemsProcessed(*n);
  state.counters["ns_per_element"] = bench::TimePer(static_cast<double>(*n));
}

std::vector<Dataset> Ranges() {
  std::vector<Dataset> in;
  for (int64_t j = 0; j < kInputs; ++j) in.push_back(Dataset::range(j * kPer, (j + 1) * kPer));
  return in;
}

Options Opts() { return {.seed = 1, .autotune = false}; }

void BM_Mix_interleave8(benchmark::State& s) {
  DrainMix(s, Dataset::range(kInputs)
                  .interleave(
                      [](const Element& e) -> Result<Dataset> {
                        const int64_t j = e[0].scalar<int64_t>();
                        return Dataset::range(j * kPer, (j + 1) * kPer);
                      },
                      {.cycle_length = kInputs, .block_length = 1})
                  .with_options(Opts()));
}
void BM_Mix_sample_from_datasets8(benchmark::State& s) {
  DrainMix(s, Dataset::sample_from_datasets(Ranges(), {}, {.seed = 1}).with_options(Opts()));
}
void BM_Mix_choose_from_datasets8(benchmark::State& s) {
  DrainMix(s, Dataset::choose_from_datasets(Ranges(), Dataset::range(kInputs).repeat(kPer))
                  .with_options(Opts()));
}
// Random access (Get): global_shuffle over the mixture against over
// range(200,000) itself; the difference is a Get's simulation of the draws
// since the nearest table point (32 on average).
void BM_Mix_global_shuffle_range(benchmark::State& s) {
  DrainMix(s, Dataset::range(kInputs * kPer).global_shuffle({.seed = 1}).with_options(Opts()));
}
void BM_Mix_global_shuffle_sample8(benchmark::State& s) {
  DrainMix(s, Dataset::sample_from_datasets(Ranges(), {}, {.seed = 1})
                  .global_shuffle({.seed = 1})
                  .with_options(Opts()));
}
BENCHMARK(BM_Mix_global_shuffle_range)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Mix_global_shuffle_sample8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Mix_interleave8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Mix_sample_from_datasets8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Mix_choose_from_datasets8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sluice
