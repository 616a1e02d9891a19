// Windows and groups: cost per INPUT element (ns_per_input) of window,
// window(n).flat_map(from_window(w).batch(n)) against batch(n),
// group_by_window, group_by_reducer and bucket_by_sequence_length, over
// range(N) as BM_Source / BM_Stage_map in stage_bench.cc (run them in the
// same process for the reference).
#include <benchmark/benchmark.h>

#include "drain.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kN = 200'000;

Dataset Src() { return Dataset::range(kN).with_options({.seed = 1, .autotune = false}); }

void DrainInputs(benchmark::State& state, const Dataset& ds) {
  std::optional<int64_t> out = bench::DrainEachIteration(state, ds);
  if (!out) return;
  state.SetItemsProcessed(kN * state.iterations());
  state.counters["ns_per_input"] = bench::TimePer(static_cast<double>(kN * state.iterations()));
  state.counters["outputs"] = static_cast<double>(*out / std::max<int64_t>(1, state.iterations()));
}

int64_t V(const Element& e) { return e[0].scalar<int64_t>(); }

void BM_Window_batch(benchmark::State& s) { DrainInputs(s, Src().batch(s.range(0))); }
void BM_Window_window(benchmark::State& s) { DrainInputs(s, Src().window(s.range(0))); }
void BM_Window_window_flat_map_batch(benchmark::State& s) {
  const int64_t n = s.range(0);
  DrainInputs(s, Src().window(n).flat_map([n](const Element& w) -> Result<Dataset> {
    return Dataset::from_window(w).batch(n);
  }));
}
// Overlapping windows (shift n/4): each input row is in 4 windows.
void BM_Window_window_shift_quarter(benchmark::State& s) {
  DrainInputs(s, Src().window(s.range(0), {.shift = s.range(0) / 4}));
}
void BM_Window_group_by_window(benchmark::State& s) {
  const int64_t n = s.range(0);
  DrainInputs(s, Src().group_by_window(
                     [](const Element& e) -> Result<int64_t> { return V(e) % 4; },
                     [n](int64_t, const Dataset& w) -> Result<Dataset> { return w.batch(n); }, n));
}
void BM_Window_group_by_reducer(benchmark::State& s) {
  Reducer sum{
      .init = [](int64_t) -> Result<Element> { return Element({Tensor::Scalar<int64_t>(0)}); },
      .reduce = [](Element st, Element e) -> Result<Element> {
        return Element({Tensor::Scalar<int64_t>(V(st) + V(e))});
      },
      .finalize = [](Element st) -> Result<Element> { return st; }};
  DrainInputs(s, Src().apply(group_by_reducer(
                     [](const Element& e) -> Result<int64_t> { return V(e) % 16; }, sum)));
}
// Sequences of 1..20 int64s; the reference is the same map + padded_batch.
Dataset Seqs() {
  return Src().map([](Element e) -> Result<Element> {
    const int64_t len = V(e) % 20 + 1;
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kInt64, Shape{len}));
    return Element({t});
  });
}
void BM_Window_seqs_padded_batch(benchmark::State& s) {
  DrainInputs(s, Seqs().padded_batch(s.range(0)));
}
void BM_Window_bucket_by_sequence_length(benchmark::State& s) {
  const int64_t n = s.range(0);
  DrainInputs(s, Seqs().bucket_by_sequence_length(
                     [](const Element& e) -> Result<int64_t> { return e[0].shape().dim(0); },
                     {5, 10, 15}, {n, n, n, n}));
}

#define WINDOW_BENCH(f) BENCHMARK(f)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime()
WINDOW_BENCH(BM_Window_batch);
WINDOW_BENCH(BM_Window_window);
WINDOW_BENCH(BM_Window_window_flat_map_batch);
WINDOW_BENCH(BM_Window_window_shift_quarter);
WINDOW_BENCH(BM_Window_group_by_window);
WINDOW_BENCH(BM_Window_group_by_reducer);
WINDOW_BENCH(BM_Window_seqs_padded_batch);
WINDOW_BENCH(BM_Window_bucket_by_sequence_length);

}  // namespace
}  // namespace sluice
