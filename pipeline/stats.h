// IteratorStats: what each stage of a running pipeline has done, and what
// the autotuner decided (Iterator::stats()).
//
// A snapshot: plain values copied out of the running iterator; safe to keep,
// copy and read from any thread.
#ifndef SLUICE_PIPELINE_STATS_H_
#define SLUICE_PIPELINE_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/json_writer.h"
#include "sluice/core/remote.h"
#include "sluice/core/remote_cache.h"
#include "sluice/core/status.h"

namespace sluice {

struct StageStats {
  std::string name;      // unique in the pipeline: "map", "map_1", "prefetch"...
  std::string kind;      // the transformation: "map", "batch", "tfrecord"...
  int64_t elements = 0;  // produced
  int64_t bytes = 0;     // tensor bytes produced
  // Time spent producing elements in this stage itself, summed over threads
  // (input stages excluded).
  int64_t busy_ns = 0;
  // Time the stage's consumer spent blocked waiting for this stage's output
  // (asynchronous stages only).
  int64_t wait_ns = 0;
  // Asynchronous stages: time their workers spent blocked waiting for the
  // input's lock, and for room in the stage's buffer, summed over workers;
  // the time one of them held the input's lock (pulling elements from the
  // input, one thread at a time: near elapsed time, the input is the wall).
  int64_t input_wait_ns = 0;
  int64_t room_wait_ns = 0;
  int64_t input_hold_ns = 0;
  // Asynchronous stages: the time their workers and consumer waited for the
  // stage's own lock (depositing results, collecting them), summed.
  int64_t lock_wait_ns = 0;
  // Sources that read ahead (TFRecordDataset with num_parallel_reads > 1):
  // buffers of records read by a task and taken, read in place by the
  // iterator instead (none was ahead, or its task had not started: the
  // pipeline's threads or CPU budget were all in use), and the time the
  // iterator waited for a read in progress.
  int64_t reads_ahead = 0;
  int64_t reads_in_place = 0;
  int64_t read_wait_ns = 0;
  int64_t parallelism = 1;   // current (autotuned or fixed)
  int64_t buffer_depth = 0;  // elements buffered now
  int64_t buffer_capacity = 0;
  int64_t buffered_bytes = 0;
  bool autotuned = false;
  int64_t errors_ignored = 0;  // ignore_errors only
  // ignore_errors only: the first 16 errors skipped, each naming what failed
  // and where (file, byte offset, record).
  std::vector<std::string> errors;
  std::string tuner_reason;  // why the autotuner last changed this stage
  // pack_sequences only: the tokens (cells) of the rows it emitted, summed
  // over components, and how many of them are padding; in the JSON with
  // padding_fraction when tokens > 0.
  int64_t tokens = 0;
  int64_t padding_tokens = 0;
  // padding_tokens / tokens, or 0 before any row.
  double padding_fraction() const {
    return tokens > 0 ? static_cast<double>(padding_tokens) / static_cast<double>(tokens) : 0.0;
  }
};

struct IteratorStats {
  std::vector<StageStats> stages;  // from the source to the consumer
  int64_t elapsed_ns = 0;          // since the iterator was made
  int64_t elements = 0;            // returned by next()
  int cpu_budget = 0;
  int64_t ram_budget = 0;
  int64_t ram_used = 0;  // bytes the buffers hold now
  int64_t ram_peak = 0;  // the most they ever held
  int64_t tuner_steps = 0;
  // Time threads spent blocked waiting for a share of the cpu_budget
  // (Options::cpu_budget), summed over threads.
  int64_t cpu_wait_ns = 0;
  // The process's object-store counters when the stats were taken
  // (core/remote.h: requests, retries, throttled, timeouts; and the local
  // cache of remote shards, core/remote_cache.h). Process-wide, not this
  // iterator's alone; all zero while no remote file was opened, and then
  // left out of ToJson / ToString.
  RemoteStats remote;
  RemoteCacheStats remote_cache;

  // Pretty JSON ({"elapsed_ns":..., "stages":[{...}]}, one stage a line),
  // written with JsonWriter: any stage name or error text gives valid JSON.
  std::string ToJson() const;
  // The same object as one value of `w` (inside a larger document).
  void WriteJson(JsonWriter& w) const;
  // A human-readable table, one stage per line.
  std::string ToString() const;
};

}  // namespace sluice

#endif  // SLUICE_PIPELINE_STATS_H_
