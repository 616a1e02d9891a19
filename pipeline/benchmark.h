// Benchmark: measures an input pipeline's throughput in place (what
// `sluice bench` runs): elements/s, batches/s, MB/s, per-stage busy and wait
// time, the parallelism AUTOTUNE chose, CPU use and peak memory.
//
//   auto report = sluice::Benchmark(ds, {.warmup_s = 2, .duration_s = 10});
//   if (report.ok()) std::puts(report->ToString().c_str());
//
// The dataset is repeated so that a short one still fills the duration; the
// warm-up (thread pools, JPEG decoders, page cache, the autotuner's first
// steps) runs on the same iterator and is subtracted: every counter in the
// report covers the measured interval only. With `epochs` > 0 the report
// covers exactly that many full passes instead (warm-up then runs on a
// separate iterator that is thrown away).
//
// Benchmark() consumes elements in the calling thread and returns when done;
// it is thread-safe as far as the dataset is (any number may run at once,
// but they then share the CPU). Errors from the pipeline come back as the
// Status that Iterator::next() returned.
#ifndef SLUICE_PIPELINE_BENCHMARK_H_
#define SLUICE_PIPELINE_BENCHMARK_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sluice/core/result.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/stats.h"

namespace sluice {

struct BenchmarkOptions {
  // Seconds consumed and discarded before measuring (0: none).
  double warmup_s = 2;
  // Seconds measured (ignored when epochs > 0). REQUIRES: > 0.
  double duration_s = 10;
  // > 0: measure exactly this many full passes over the dataset instead of
  // a duration. REQUIRES: the dataset is finite.
  int64_t epochs = 0;
  // Where to write a Chrome/Perfetto trace of the measured iterator (its
  // whole life, warm-up included); empty: none.
  std::string trace_path;
  // Whether elements are batches (their component 0's first dimension is
  // counted as elements). Unset: true when the last batch-like stage of the
  // pipeline is batch or padded_batch (not unbatch).
  std::optional<bool> batched;
  // Called about every `progress_interval_s` seconds while measuring with
  // the elements so far and the seconds elapsed (may be empty).
  std::function<void(int64_t batches, double seconds)> progress;
  double progress_interval_s = 1;
};

struct BenchmarkReport {
  // What the final stage produced during the measured interval.
  int64_t batches = 0;   // elements of the dataset (batches if batched)
  int64_t elements = 0;  // rows: batch dimension summed when batched
  int64_t bytes = 0;     // tensor bytes of the produced elements
  double seconds = 0;    // measured wall time
  double warmup_seconds = 0;
  int64_t epochs = 0;  // full passes when measuring epochs, else 0
  bool batched = false;
  double elements_per_s = 0;
  double batches_per_s = 0;
  double mb_per_s = 0;  // 1 MB = 1e6 bytes
  // Process CPU time (user + system, getrusage) over wall time: cores_used
  // is that ratio, cpu_utilisation the same divided by the cores available
  // (cpu_budget), in [0, 1] unless other threads of the process are busy.
  double cpu_seconds = 0;
  double cores_used = 0;
  double cpu_utilisation = 0;
  int64_t peak_rss_bytes = 0;  // the process's peak resident memory so far
  int64_t ram_peak = 0;        // most the pipeline's buffers ever held
  // Per stage: elements, bytes, busy_ns, wait_ns, errors_ignored, tokens and
  // padding_tokens are deltas over the measured interval; parallelism,
  // buffers and autotune fields are their values at the end. elapsed_ns and
  // elements likewise.
  IteratorStats stats;
  std::string pipeline;  // Dataset::DebugString()

  // Pretty JSON: the fields above, with "stats" as IteratorStats::ToJson
  // (JsonWriter: valid JSON whatever the names; non-finite ratios as 0).
  std::string ToJson() const;
  // The same object as one value of `w` (inside a larger document).
  void WriteJson(JsonWriter& w) const;
  // A readable summary and a per-stage table.
  std::string ToString() const;
};

// Runs `ds` as described above. InvalidArgument for bad options, the build
// error of `ds`, or the first error next() returned (its message names the
// stage).
Result<BenchmarkReport> Benchmark(const Dataset& ds, const BenchmarkOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_BENCHMARK_H_
