// RunConversion: the parallel engine under `sluice convert`.
//
// Workers (core/background.h's RunWorkers) turn items of an ordered list into serialized
// records with a caller's function, and the records are written to shards
// in list order, so every shard's bytes are the same whatever the number of
// workers. Up to `workers` shards are filled at once (items are handed out
// round-robin over them), so that compression runs in parallel too; each
// shard is written by one thread at a time, under a temporary name that is
// renamed when the shard is complete (TFRecordWriter's atomic mode), its
// .idx likewise.
//
// With a TaskShare of several tasks only the owned shards' items are
// processed; every task's shards are still the bytes a single run writes.
//
// An item whose function fails is skipped and reported with its Status;
// the run goes on. Writing errors (an unwritable output, a full disk) are
// fatal: the run stops, unfinished shards are discarded and finished ones
// stay (a --resume run completes them).
//
// Memory is bounded: a worker takes a new item only while fewer than
// 8 x workers items are in flight or waiting for their turn to be written,
// and while those waiting hold less than 256 MB.
//
// RunConversion blocks; it calls `process` from its worker threads (so
// `process` must be thread-safe) and draws the progress from the calling
// thread.
#ifndef SLUICE_TOOLS_CONVERT_RUNNER_H_
#define SLUICE_TOOLS_CONVERT_RUNNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "convert_shards.h"
#include "sluice/core/buffer.h"
#include "sluice/core/result.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice::tools {

// One serialized record: a string, or a span of a larger buffer (a record
// built around a file read straight into its place). Move-only.
class RecordBytes {
 public:
  explicit RecordBytes(std::string bytes) : str_(std::move(bytes)), end_(str_.size()) {}
  RecordBytes(Buffer buffer, size_t begin, size_t end)
      : buf_(std::move(buffer)), begin_(begin), end_(end) {}
  std::string_view view() const {
    const char* base = buf_.data() ? reinterpret_cast<const char*>(buf_.data()) : str_.data();
    return std::string_view(base, end_).substr(begin_);
  }
  size_t size() const { return end_ - begin_; }

 private:
  std::string str_;
  Buffer buf_;
  size_t begin_ = 0, end_ = 0;
};

// A shard as written: what the manifest records of it.
struct ShardWritten {
  std::string path;
  uint64_t records = 0;
  uint64_t file_bytes = 0;
  uint32_t file_crc32c = 0;
};

struct ConvertJob {
  // The plan: shard i holds items shards[i] (contiguous, in order, covering
  // the list). Shard files are ShardPath(prefix, i, shards.size(), compression).
  std::string prefix;
  std::vector<ShardRange> shards;
  Compression compression = Compression::kNone;
  bool write_index = false;
  // Shards to leave as they are (complete already, checked by the caller:
  // PrepareConversion); empty: none.
  std::vector<bool> keep;
  // fsync each shard and .idx, then their folder, as they are published
  // (TFRecordWriterOptions::sync_on_close): power-loss safe.
  bool sync = false;
  // This process's share when several split the run (convert_shards.h): it
  // writes, resumes and removes the temporaries of only the shards it owns,
  // and never touches the others' files. Default: all of them.
  TaskShare task;
  // Worker threads (>= 1).
  int workers = 1;
  // The serialized record for item i, or why it is skipped. Thread-safe.
  std::function<Result<RecordBytes>(size_t item)> process;
  // Input bytes of item i, for the progress line (may be empty).
  std::vector<uint64_t> item_bytes;
  // Progress on stderr (see progress.h).
  bool progress = true;
  std::string progress_label = "converting";
  // Called (from a worker thread, one at a time per shard) once shard
  // `shard`'s file and .idx are published; an error is fatal. May be empty.
  std::function<Status(size_t shard, const ShardWritten& written)> on_shard_done;
  // Polled a few times a second: true stops the run as a fatal error would
  // (Cancelled), unfinished shards discarded. May be empty.
  std::function<bool()> interrupted;
};

struct ConvertReport {
  Status status;                 // a fatal error; OK otherwise
  size_t shards_total = 0;       // in the plan
  size_t shards_owned = 0;       // of those, this task's (all of them with one task)
  size_t shards_written = 0;     // by this run
  size_t shards_resumed = 0;     // complete already, left as they were
  size_t stale_temporaries = 0;  // files of an interrupted run removed
  uint64_t items_processed = 0;  // converted or skipped by this run
  uint64_t items_converted = 0;
  bool interrupted = false;  // stopped by job.interrupted (status is Cancelled)
  uint64_t bytes_in = 0;     // item_bytes of the items converted
  uint64_t bytes_out = 0;    // record stream bytes written (before compression)
  double seconds = 0;
  // Items skipped, in list order, with why.
  std::vector<std::pair<size_t, Status>> skipped;
};

ConvertReport RunConversion(const ConvertJob& job);

// CPUs this process may run on (its affinity mask), at least 1.
int AvailableCpus();

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_RUNNER_H_
