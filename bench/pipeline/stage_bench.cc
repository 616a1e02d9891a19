// Pipeline overhead per element per stage, parallel map scaling, and the
// memory a shuffle buffer costs per byte of payload.
//
// Per-stage overhead: each BM_Stage/<name> runs range(N) through one stage
// with a trivial function; BM_Source is range(N) alone in the same run, so
// (stage ns/element - source ns/element) is that stage's own overhead.
// Times are wall-clock: asynchronous stages work on other threads.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "drain.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

constexpr int64_t kN = 200'000;

// Reads ds to the end once per iteration; items: elements x items_per_element.
void Drain(benchmark::State& state, const Dataset& ds, int64_t items_per_element = 1) {
  std::optional<int64_t> n = bench::DrainEachIteration(state, ds);
  if (!n) return;
  state.SetItemsProcessed(*n * items_per_element);
  state.counters["ns_per_element"] = bench::TimePer(static_cast<double>(*n));
}

Dataset Src() { return Dataset::range(kN).with_options({.seed = 1, .autotune = false}); }
Element Same(Element e) { return e; }

void BM_Source(benchmark::State& s) { Drain(s, Src()); }
void BM_Stage_map(benchmark::State& s) { Drain(s, Src().map(Same)); }
void BM_Stage_map_parallel2(benchmark::State& s) { Drain(s, Src().map(Same, {.parallelism = 2})); }
void BM_Stage_prefetch(benchmark::State& s) { Drain(s, Src().prefetch(16)); }
void BM_Stage_batch1(benchmark::State& s) { Drain(s, Src().batch(1)); }
void BM_Stage_take(benchmark::State& s) { Drain(s, Src().take(kN)); }
void BM_Stage_repeat1(benchmark::State& s) { Drain(s, Src().repeat(1)); }
void BM_Stage_filter(benchmark::State& s) {
  Drain(s, Src().filter([](const Element&) -> Result<bool> { return true; }));
}
void BM_Stage_shuffle(benchmark::State& s) { Drain(s, Src().shuffle(1024)); }
void BM_Stage_enumerate(benchmark::State& s) { Drain(s, Src().enumerate()); }
BENCHMARK(BM_Source)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_map)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_map_parallel2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_prefetch)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_batch1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_take)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_repeat1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_filter)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_shuffle)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_enumerate)->Unit(benchmark::kMillisecond)->UseRealTime();

// interleave over 200 sub-datasets of range(1000) (cycle_length 4, block 1):
// 200,000 elements, like BM_Source, so the difference is interleave's own
// cost per element (plus 200 sub-dataset opens). parallelism 1 reads in the
// caller's thread; 2 reads ahead in tasks; the last also drops determinism.
void BM_Stage_interleave(benchmark::State& s) {
  const int64_t p = s.range(0);
  const bool deterministic = s.range(1) != 0;
  Drain(s, Dataset::range(kN / 1000)
               .interleave([](const Element&) -> Result<Dataset> { return Dataset::range(1000); },
                           {.cycle_length = 4, .parallelism = p, .deterministic = deterministic})
               .with_options({.seed = 1, .autotune = false}));
}
BENCHMARK(BM_Stage_interleave)
    ->ArgNames({"p", "det"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({2, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// 200,000 records of 100 bytes in an indexed TFRecord file, read in order:
// with the index (exact cardinality, random access; read in runs of adjacent
// records) and without it (the buffered sequential reader, the reference).
const std::string& SmallRecordsFile() {
  static const std::string path = [] {
    const std::string p = "/tmp/sluice_bench_small_records.tfrecord";
    TFRecordWriterOptions o;
    o.write_index = true;
    Result<TFRecordWriter> w = TFRecordWriter::Open(p, o);
    if (!w.ok()) std::abort();
    const std::string payload(100, 'x');
    for (int i = 0; i < 200'000; ++i) (void)w->Write(payload);
    if (!w->Close().ok()) std::abort();
    return p;
  }();
  return path;
}
void BM_TFRecordInOrder(benchmark::State& s) {
  const bool indexed = s.range(0) == 1;
  s.SetLabel(indexed ? "indexed" : "sequential reader");
  Drain(s, TFRecordDataset({SmallRecordsFile()}, {.use_index = indexed}));
}
BENCHMARK(BM_TFRecordInOrder)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// A map doing ~20 us of arithmetic per element, at parallelism 1..N.
void BM_ParallelMapScaling(benchmark::State& state) {
  const int64_t p = state.range(0);
  auto work = [](Element e) {
    double x = static_cast<double>(e[0].scalar<int64_t>());
    for (int i = 0; i < 6000; ++i) x = std::sqrt(x + i);
    benchmark::DoNotOptimize(x);
    return e;
  };
  Drain(state,
        Dataset::range(4000).map(work, {.parallelism = p}).with_options({.autotune = false}));
}
BENCHMARK(BM_ParallelMapScaling)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Map-and-batch fusion: a parallel map making 224x224x3 float images (one
// fill, the cheapest possible augmentation) -> batch(128) -> prefetch, with
// Options::map_and_batch_fusion off (0: batch copies every row on one
// thread, after the rows left the cache) and on (1: the map's workers copy
// each row into the batch's buffer as it is made). Items: images.
void BM_MapBatchBigRows(benchmark::State& state) {
  const bool fusion = state.range(0) != 0;
  auto make = [](Element e) -> Result<Element> {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kFloat32, Shape({224, 224, 3})));
    auto f = t.flat<float>();
    std::fill(f.begin(), f.end(), static_cast<float>(e[0].scalar<int64_t>()));
    return Element({std::move(t)});
  };
  Drain(state,
        Dataset::range(2560)
            .map(make, {.parallelism = kAutotune})
            .batch(128)
            .prefetch(2)
            .with_options({.map_and_batch_fusion = fusion}),
        128);
  state.SetBytesProcessed(state.items_processed() * 224 * 224 * 3 * 4);
}
BENCHMARK(BM_MapBatchBigRows)
    ->ArgName("fusion")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Per-element cost of case 1's pipeline shape with a cheap map: records ->
// map(spin `us` microseconds, then write a 4 KiB float row into
// ctx.AllocateOutput) at parallelism p -> batch(128) -> prefetch. The
// counter `efficiency` is the rate over p x the rate of the same calls in a
// plain loop on this thread (measured first, in the same run): 1.0 means no
// pipeline overhead, and what it loses at 10-50 us per element shows the
// per-element hand-off, collect and reorder costs that stay hidden behind
// ~1 ms image calls on two cores but not at 16 cores' element rates.
void SpinFor(double us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}
void BM_MapBatchEfficiency(benchmark::State& state) {
  const double us = static_cast<double>(state.range(0));
  const int64_t p = state.range(1);
  auto work = [us](Element e, const MapContext& ctx) -> Result<Element> {
    SpinFor(us);
    SLUICE_ASSIGN_OR_RETURN(Tensor t, ctx.AllocateOutput(0, DType::kFloat32, Shape{1024}));
    auto f = t.flat<float>();
    std::fill(f.begin(), f.end(), static_cast<float>(e[0].scalar<int64_t>()));
    return Element({std::move(t)});
  };
  // The same calls in a plain loop: the ceiling per thread.
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kLoop = 2000;
  for (int64_t i = 0; i < kLoop; ++i) {
    auto r = work(Element({Tensor::Scalar<int64_t>(i)}), MapContext{.index = i});
    benchmark::DoNotOptimize(r);
  }
  const double loop_rate =
      kLoop / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t n =
      std::max<int64_t>(128 * 20, static_cast<int64_t>(2.0 * loop_rate * p) / 128 * 128);
  const auto t1 = std::chrono::steady_clock::now();
  Drain(state,
        Dataset::range(n)
            .map(work, {.parallelism = p})
            .batch(128, {.drop_remainder = true})
            .prefetch(2)
            .with_options({.cpu_budget = static_cast<int>(p), .autotune = false}),
        128);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  state.counters["efficiency"] =
      static_cast<double>(state.items_processed()) / seconds / (loop_rate * static_cast<double>(p));
}
BENCHMARK(BM_MapBatchEfficiency)
    ->ArgNames({"us", "p"})
    ->Args({10, 1})
    ->Args({10, 2})
    ->Args({50, 1})
    ->Args({50, 2})
    ->Args({200, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Heap bytes held by a full 10,000-element shuffle buffer of 1 KiB elements,
// per payload byte (target < 1.1).
void BM_ShuffleBufferMemory(benchmark::State& state) {
  constexpr int64_t kElems = 10'000, kBytes = 1024;
  double ratio = 0;
  for (auto _ : state) {
    auto ds = Dataset::range(2 * kElems)
                  .map([](Element) -> Result<Element> {
                    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kUInt8, Shape{kBytes}));
                    return Element({t});
                  })
                  .shuffle(kElems, {.seed = 1});
    malloc_trim(0);
    const size_t before = mallinfo2().uordblks;
    Result<Iterator> it = ds.iterator();
    auto first = it->next();  // fills the buffer
    const size_t after = mallinfo2().uordblks;
    ratio = static_cast<double>(after - before) / static_cast<double>(kElems * kBytes);
    benchmark::DoNotOptimize(first);
  }
  state.counters["bytes_per_payload_byte"] = ratio;
}
BENCHMARK(BM_ShuffleBufferMemory)->Iterations(3)->Unit(benchmark::kMillisecond);

// How long destroying an iterator takes while a slow map (20 ms per call,
// parallelism 8) is in flight (target < 100 ms).
void BM_CancelWithSlowMap(benchmark::State& state) {
  auto ds = Dataset::range(1'000'000).map(
      [](Element e) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return e;
      },
      {.parallelism = 8});
  for (auto _ : state) {
    state.PauseTiming();
    Result<Iterator> it = ds.iterator();
    (void)it->next();
    state.ResumeTiming();
    it = Status::Cancelled("drop");  // destroys the iterator
  }
}
BENCHMARK(BM_CancelWithSlowMap)->Iterations(10)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
