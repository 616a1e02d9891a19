// save / load / snapshot (pipeline/snapshot.h): what reading a snapshot
// costs against computing its input, and save / load throughput.
//
//   BM_Stage_snapshot_read   range(200k) int64 scalars read back from a
//                            snapshot: per-element overhead, against
//                            BM_Stage_map / BM_Source of stage_bench.cc.
//   BM_Stage_snapshot_write  the writing pass over range(200k) (a fresh
//                            folder each iteration).
//   BM_Snapshot_input        the "expensive" input: 20k elements of 16 KiB
//                            float32, each computed by a map (a few passes
//                            of arithmetic over its bytes).
//   BM_Snapshot_read         the same elements read from its snapshot.
//   BM_Save / BM_Load        the same 20k x 16 KiB elements written by
//                            save() and read by load(); bytes/s is MB/s of
//                            tensor payload (compression: none, gzip).
// The folders live under $TMPDIR (the page cache: file system speed, not
// the disk's).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "drain.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kScalars = 200'000;
constexpr int64_t kBig = 20'000;
constexpr int64_t kFloats = 4096;  // 16 KiB per element

std::string Scratch(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("sluice_snapshot_bench_" + std::to_string(::getpid())) / name;
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p, ec);
  return p.string();
}
void RemoveScratch() {
  std::error_code ec;
  fs::remove_all(
      fs::temp_directory_path() / ("sluice_snapshot_bench_" + std::to_string(::getpid())), ec);
}

int64_t Drain(benchmark::State& state, const Dataset& ds) {
  return bench::DrainOnce(state, ds).value_or(0);
}

void PerElement(benchmark::State& state, int64_t n) {
  state.SetItemsProcessed(n);
  state.counters["ns_per_element"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

Dataset Scalars() { return Dataset::range(kScalars).with_options({.seed = 1, .autotune = false}); }

void BM_Stage_snapshot_read(benchmark::State& state) {
  const std::string dir = Scratch("scalars");
  const Dataset ds = Scalars().snapshot(dir);
  Drain(state, ds);  // writes
  int64_t n = 0;
  for (auto _ : state) n += Drain(state, ds);
  PerElement(state, n);
  RemoveScratch();
}

void BM_Stage_snapshot_write(benchmark::State& state) {
  const std::string dir = Scratch("writes");
  int64_t n = 0, i = 0;
  for (auto _ : state) n += Drain(state, Scalars().snapshot(dir + "/" + std::to_string(i++)));
  PerElement(state, n);
  RemoveScratch();
}

// 16 KiB of floats, computed.
Dataset Expensive() {
  return Dataset::range(kBig).map(
      [](Element e) -> Result<Element> {
        const float seed = static_cast<float>(e[0].scalar<int64_t>());
        SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kFloat32, Shape{kFloats}));
        auto f = t.flat<float>();
        for (int64_t i = 0; i < kFloats; ++i) f[i] = std::sin(seed + static_cast<float>(i));
        return Element({std::move(t)});
      },
      {.name = "compute"});
}

void Bytes(benchmark::State& state, int64_t elements) {
  state.SetBytesProcessed(elements * kFloats * 4);
  state.SetItemsProcessed(elements);
}

void BM_Snapshot_input(benchmark::State& state) {
  int64_t n = 0;
  for (auto _ : state) n += Drain(state, Expensive());
  Bytes(state, n);
}

void BM_Snapshot_read(benchmark::State& state) {
  const std::string dir = Scratch("big");
  const Dataset ds = Expensive().snapshot(dir);
  Drain(state, ds);
  int64_t n = 0;
  for (auto _ : state) n += Drain(state, ds);
  Bytes(state, n);
  RemoveScratch();
}

void BM_Save(benchmark::State& state) {
  const std::string dir = Scratch("save");
  const Compression c = state.range(0) ? Compression::kGzip : Compression::kNone;
  // The input once in memory, so only the save is timed.
  const Dataset input = Expensive().cache();
  Drain(state, input);
  int64_t n = 0;
  for (auto _ : state) {
    Status s = input.save(dir, {.compression = c});
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    n += kBig;
  }
  Bytes(state, n);
  RemoveScratch();
}

void BM_Load(benchmark::State& state) {
  const std::string dir = Scratch("load");
  const Compression c = state.range(0) ? Compression::kGzip : Compression::kNone;
  Status s = Expensive().save(dir, {.compression = c});
  if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  int64_t n = 0;
  for (auto _ : state) n += Drain(state, Dataset::load(dir));
  Bytes(state, n);
  RemoveScratch();
}

BENCHMARK(BM_Stage_snapshot_read)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stage_snapshot_write)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Snapshot_input)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Snapshot_read)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Save)->ArgName("gzip")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Load)->ArgName("gzip")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sluice
