// Per-element overhead of the small stages (scan, take_while, unique,
// rebatch, counter, random, rejection_resample), each against map in the
// same run (BM_Stage_map and BM_Source are in stage_bench.cc; the *_map
// reference here is the same pipeline shape with a map in the stage's place).
// Each runs 200,000 elements of range (or counter/random taking as many).
#include <benchmark/benchmark.h>

#include "drain.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kN = 200'000;

// Reads ds to the end once per iteration. ns_per_input_row: per row of the
// range(kN) (or counter/random take(kN)) the pipeline starts from, the
// measure to compare with map's; ns_per_output: per element that comes out.
void DrainSmall(benchmark::State& state, const Dataset& ds) {
  std::optional<int64_t> n = bench::DrainEachIteration(state, ds);
  if (!n) return;
  state.counters["ns_per_input_row"] = bench::TimePer(static_cast<double>(state.iterations() * kN));
  state.counters["ns_per_output"] = bench::TimePer(static_cast<double>(*n));
}

Options Fixed() { return {.seed = 1, .autotune = false}; }
Dataset Range() { return Dataset::range(kN).with_options(Fixed()); }
Element Same(Element e) { return e; }

void BM_Small_map(benchmark::State& s) { DrainSmall(s, Range().map(Same)); }
// map whose function makes a new scalar, the work scan's function below does.
void BM_Small_map_new_scalar(benchmark::State& s) {
  DrainSmall(s, Range().map([](Element e) {
    return Element({Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() + 1)});
  }));
}
void BM_Small_scan(benchmark::State& s) {
  DrainSmall(s, Range().scan(Element({Tensor::Scalar<int64_t>(0)}),
                             [](Element state, Element e) -> Result<std::pair<Element, Element>> {
                               const int64_t sum =
                                   state[0].scalar<int64_t>() + e[0].scalar<int64_t>();
                               return std::pair(Element({Tensor::Scalar<int64_t>(sum)}), e);
                             }));
}
void BM_Small_take_while(benchmark::State& s) {
  DrainSmall(s, Range().take_while([](const Element&) -> Result<bool> { return true; }));
}
// Every value distinct (the set grows to 200,000), and 16 distinct values.
void BM_Small_unique_distinct(benchmark::State& s) { DrainSmall(s, Range().unique()); }
void BM_Small_unique_repeats(benchmark::State& s) {
  DrainSmall(s, Range()
                    .map([](Element e) {
                      return Element({Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() % 16)});
                    })
                    .unique());
}
// batch(32) then rebatch to sizes inside one input batch (views) and across
// input batches (copies); batch(32).map is the reference.
void BM_Small_batch32_map(benchmark::State& s) { DrainSmall(s, Range().batch(32).map(Same)); }
void BM_Small_rebatch_8(benchmark::State& s) { DrainSmall(s, Range().batch(32).rebatch(8)); }
void BM_Small_rebatch_48(benchmark::State& s) { DrainSmall(s, Range().batch(32).rebatch(48)); }
void BM_Small_counter(benchmark::State& s) {
  DrainSmall(s, Dataset::counter().take(kN).with_options(Fixed()));
}
void BM_Small_random(benchmark::State& s) {
  DrainSmall(s, Dataset::random({.seed = 3}).take(kN).with_options(Fixed()));
}
// Two classes 50/50 resampled to 80/20 with the initial distribution given,
// and estimated (each output reads more than one input row, in two passes).
ClassFn Parity() {
  return [](const Element& e) -> Result<int64_t> { return e[0].scalar<int64_t>() % 2; };
}
void BM_Small_rejection_resample_given(benchmark::State& s) {
  DrainSmall(
      s, Range().rejection_resample(Parity(), {0.8, 0.2}, {.initial_dist = {0.5, 0.5}, .seed = 1}));
}
void BM_Small_rejection_resample_estimated(benchmark::State& s) {
  DrainSmall(s, Range().rejection_resample(Parity(), {0.8, 0.2}, {.seed = 1}));
}

#define SMALL_BENCH(name) BENCHMARK(name)->Unit(benchmark::kMillisecond)->UseRealTime()
SMALL_BENCH(BM_Small_map);
SMALL_BENCH(BM_Small_map_new_scalar);
SMALL_BENCH(BM_Small_scan);
SMALL_BENCH(BM_Small_take_while);
SMALL_BENCH(BM_Small_unique_distinct);
SMALL_BENCH(BM_Small_unique_repeats);
SMALL_BENCH(BM_Small_batch32_map);
SMALL_BENCH(BM_Small_rebatch_8);
SMALL_BENCH(BM_Small_rebatch_48);
SMALL_BENCH(BM_Small_counter);
SMALL_BENCH(BM_Small_random);
SMALL_BENCH(BM_Small_rejection_resample_given);
SMALL_BENCH(BM_Small_rejection_resample_estimated);

}  // namespace
}  // namespace sluice
