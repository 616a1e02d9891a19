// RunReadAhead: reads the next run of records of each open indexed file
// (IndexedRecordFile) in a task, while the iterator hands out the current one.
//
// A file source with num_parallel_reads > 1 over indexed files reads each
// file in runs of adjacent records (IndexedRecordFile::ReadRun: one read of
// up to buffer_size bytes, every record checked as its format checks). Read in the
// iterator's Next(), a run's pread and checks run in whatever thread pulls
// the records, one thread at a time (a parallel map pulls its input under a
// lock), so reading is serial however many files are open. Here, when the
// iterator takes a run, it starts reading the file's next run in a task of
// the pipeline's arena: the files' reads then run beside each other and
// beside the stages above, as tf.data's num_parallel_reads does.
//
// The run read ahead is the one ReadRun call the iterator would make next,
// made earlier with the same arguments: Take() returns it only for exactly
// those arguments, so what the iterator returns (records, errors, where they
// fall) does not depend on read-ahead. The reads run as ReadAhead's
// (read_ahead.h: taken back when not started, charged to the RAM budget for
// max_bytes, counted in the stage's stats).
//
// Owns the pending reads and their charges. The files must outlive it (the
// dataset node owns them); so must `ctx`. The destructor waits for reads in
// progress (one pread each).
//
// Thread-safety: one iterator thread at a time.
#ifndef SLUICE_PIPELINE_INTERNAL_RUN_READ_AHEAD_H_
#define SLUICE_PIPELINE_INTERNAL_RUN_READ_AHEAD_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/read_ahead.h"
#include "sluice/records/record_source.h"

namespace sluice::pipeline_internal {

class RunReadAhead {
 public:
  // The arguments of one ReadRun call.
  struct RunKey {
    uint64_t first = 0;
    size_t max_bytes = 0;
    uint64_t stride = 1;
    bool operator==(const RunKey&) const = default;
  };

  // `files`: how many file indices Start/Take may name. `counters`: the
  // stage's, whose CPU share a read holds while it runs.
  RunReadAhead(IteratorContext& ctx, StageCounters* counters, size_t files)
      : reads_(ctx, counters), pending_(files), keys_(files) {}
  ~RunReadAhead() {
    for (auto& p : pending_) reads_.Drop(p);
  }

  // Starts reading `key` of `file` (file number `index`) in a task,
  // dropping a read-ahead of that file with other arguments. Nothing when
  // its charge does not fit in the RAM budget.
  void Start(const IndexedRecordFile& file, size_t index, const RunKey& key) {
    reads_.Drop(pending_[index]);
    keys_[index] = key;
    pending_[index] = reads_.Start(static_cast<int64_t>(key.max_bytes), [&file, key] {
      return file.ReadRun(key.first, key.max_bytes, key.stride);
    });
  }
  // ReadRun's result for `key` of file `index` if it was read ahead (or is
  // being read: then waits for it, holding no CPU share); nullopt
  // otherwise, and the caller reads it. Either way the file has no
  // read-ahead left.
  std::optional<Result<std::vector<Record>>> Take(size_t index, const RunKey& key) {
    if (!pending_[index] || !(keys_[index] == key)) {
      reads_.Drop(pending_[index]);
      reads_.CountInPlace();
      return std::nullopt;
    }
    return reads_.Take(pending_[index]);
  }

 private:
  using Reads = ReadAhead<Result<std::vector<Record>>>;
  Reads reads_;
  std::vector<std::shared_ptr<Reads::Pending>> pending_;  // per file
  std::vector<RunKey> keys_;                              // per file: of pending_
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_RUN_READ_AHEAD_H_
