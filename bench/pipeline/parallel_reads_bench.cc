// TFRecordDataset's parallel reads: 8 files of 32 KiB records (an encoded
// image's size) read record by record to the end, with num_parallel_reads
// 1 (each file read in the pulling thread, the same-run reference) and 8
// (each open file's next buffer read ahead in a task), uncompressed with an
// index, uncompressed without one, and GZIP. Items: records; bytes: their
// payload. The ratio of the 8 line to the 1 line is what reading in
// parallel brings on this machine's cores (docs/perf.md; on one core it can
// only cost).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

constexpr int kFiles = 8;
constexpr int kRecords = 96;  // per file: 3 MiB uncompressed
constexpr size_t kRecordBytes = 32 << 10;

enum Kind { kIndexed, kPlain, kGzip };

// Noise-like but compressible payloads (~2:1 with GZIP), deterministic.
std::string Payload(Rng& rng) {
  std::string s(kRecordBytes, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>('a' + rng.UniformInt(16));
  return s;
}

// Writes (once per process) kFiles files of kind `k`; returns their paths.
const std::vector<std::string>& Files(Kind k) {
  static std::map<Kind, std::vector<std::string>> made;
  auto it = made.find(k);
  if (it != made.end()) return it->second;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sluice-parallel-reads-" + std::to_string(k));
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  Rng rng(7);
  std::vector<std::string> pool;
  for (int i = 0; i < 8; ++i) pool.push_back(Payload(rng));
  for (int f = 0; f < kFiles; ++f) {
    TFRecordWriterOptions o;
    o.compression = k == kGzip ? Compression::kGzip : Compression::kNone;
    o.write_index = k == kIndexed;
    const std::string path =
        (dir / ("part-" + std::to_string(f) + (k == kGzip ? ".tfrecord.gz" : ".tfrecord")))
            .string();
    auto w = TFRecordWriter::Open(path, o);
    if (!w.ok()) std::abort();
    for (int r = 0; r < kRecords; ++r) {
      if (!w->Write(pool[static_cast<size_t>(f + r) % pool.size()]).ok()) std::abort();
    }
    if (!w->Close().ok()) std::abort();
    paths.push_back(path);
  }
  return made.emplace(k, std::move(paths)).first->second;
}

void BM_ParallelReads(benchmark::State& state, Kind k) {
  const int64_t reads = state.range(0);
  const Dataset ds = TFRecordDataset(Files(k), {.num_parallel_reads = reads});
  int64_t n = 0;
  for (auto _ : state) {
    Result<Iterator> it = ds.iterator();
    if (!it.ok()) {
      state.SkipWithError(it.status().ToString().c_str());
      return;
    }
    for (;;) {
      auto e = it->next();
      if (!e.ok()) {
        state.SkipWithError(e.status().ToString().c_str());
        return;
      }
      if (!e->has_value()) break;
      ++n;
    }
  }
  state.SetItemsProcessed(n);
  state.SetBytesProcessed(n * static_cast<int64_t>(kRecordBytes));
}

BENCHMARK_CAPTURE(BM_ParallelReads, indexed, kIndexed)
    ->ArgName("reads")
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ParallelReads, plain, kPlain)
    ->ArgName("reads")
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ParallelReads, gzip, kGzip)
    ->ArgName("reads")
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
