// pack_sequences: first-fit against best-fit on a realistic distribution
// of sequence lengths (log-normal, median 300 tokens, clipped to
// [50, 2048]) packed into rows of 2048 int32 tokens.
//
// BM_Pack/algorithm:A/bins:N (A: 0 first-fit, 1 best-fit; N: the
// num_packing_bins) reports input sequences per second (items_per_second)
// and the padding fraction of the rows it emitted (padding_fraction, from
// Iterator::stats()). BM_Pack_map_reference
// is the same source through map alone, in the same run: the difference is
// packing's own cost.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>

#include "drain.h"
#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/pack_sequences.h"

namespace sluice {
namespace {

constexpr int64_t kSeqs = 20'000;
constexpr int64_t kRow = 2048;

const std::vector<Tensor>& Sequences() {
  static const std::vector<Tensor> seqs = [] {
    std::vector<Tensor> out;
    Rng rng(42);
    for (int64_t i = 0; i < kSeqs; ++i) {
      const double len = std::exp(std::log(300.0) + 0.9 * rng.Normal());
      const int64_t n = std::clamp<int64_t>(std::llround(len), 50, kRow);
      std::vector<int32_t> tokens(static_cast<size_t>(n));
      for (int32_t& t : tokens) t = static_cast<int32_t>(rng.UniformInt(32000));
      out.push_back(Tensor::FromVector<int32_t>(tokens).value());
    }
    return out;
  }();
  return seqs;
}

// {"inputs": int32[n]} per sequence: a handle copied out of Sequences().
Dataset Source() {
  const std::vector<Tensor>* seqs = &Sequences();
  return Dataset::range(kSeqs)
      .map([seqs](Element e) {
        return Element({(*seqs)[static_cast<size_t>(e[0].scalar<int64_t>())]}, {"inputs"});
      })
      .with_options({.seed = 1, .autotune = false});
}

// Drains ds once per iteration; items: input sequences.
void Run(benchmark::State& state, const Dataset& ds) {
  double padding = 0;
  for (auto _ : state) {
    Result<Iterator> it = ds.iterator();
    if (!it.ok()) {
      state.SkipWithError(it.status().ToString().c_str());
      return;
    }
    if (!bench::DrainIterator(state, *it)) return;
    for (const StageStats& s : it->stats().stages) {
      if (s.kind == "pack_sequences") padding = s.padding_fraction();
    }
  }
  state.SetItemsProcessed(state.iterations() * kSeqs);
  state.counters["padding_fraction"] = padding;
}

void BM_Pack_map_reference(benchmark::State& s) { Run(s, Source()); }

void BM_Pack(benchmark::State& s) {
  const PackAlgorithm a = s.range(0) == 0 ? PackAlgorithm::kFirstFit : PackAlgorithm::kBestFit;
  s.SetLabel(a == PackAlgorithm::kFirstFit ? "first_fit" : "best_fit");
  Run(s, pack_sequences(Source(), kRow, {.algorithm = a, .num_packing_bins = s.range(1)}));
}

BENCHMARK(BM_Pack_map_reference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Pack)
    ->ArgNames({"algorithm", "bins"})
    ->ArgsProduct({{0, 1}, {1, 8, 64}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice
