// RunReadAhead: reads the next run of records of each open indexed TFRecord
// file in a task, while the iterator hands out the current one.
//
// TFRecordDataset with num_parallel_reads > 1 over indexed files reads each
// file in runs of adjacent records (IndexedTFRecordFile::ReadRun: one pread
// of up to buffer_size bytes, every record's checksums checked). Read in the
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
// fall) does not depend on read-ahead. A read not started yet is taken back
// (the caller reads it itself: a task that cannot start, its arena's
// threads all busy, never stalls the iterator); one in progress is waited
// for. A read-ahead is charged to the RAM budget for its max_bytes until it
// is taken or dropped, and is not started when that does not fit.
//
// Owns the pending reads and their charges. The files must outlive it (the
// dataset node owns them); so must `ctx`. The destructor waits for reads in
// progress (one pread each); a queued task then finds it gone and leaves.
//
// Thread-safety: Start() and Take() are called by the one iterator thread
// at a time; tasks synchronize with it through an internal mutex.
#ifndef SLUICE_PIPELINE_INTERNAL_RUN_READ_AHEAD_H_
#define SLUICE_PIPELINE_INTERNAL_RUN_READ_AHEAD_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/records/indexed_tfrecord_file.h"

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
  RunReadAhead(IteratorContext& ctx, StageCounters* counters, size_t files);
  ~RunReadAhead();
  RunReadAhead(const RunReadAhead&) = delete;
  RunReadAhead& operator=(const RunReadAhead&) = delete;

  // Starts reading `key` of `file` (file number `index`) in a task,
  // dropping a read-ahead of that file with other arguments. Nothing when
  // its charge does not fit in the RAM budget.
  void Start(const IndexedTFRecordFile& file, size_t index, const RunKey& key);
  // ReadRun's result for `key` of file `index` if it was read ahead (or is
  // being read: then waits for it, holding no CPU share); nullopt
  // otherwise, and the caller reads it. Either way the file has no
  // read-ahead left.
  std::optional<Result<std::vector<Record>>> Take(size_t index, const RunKey& key);

  // Reads taken from a task (done or waited for) and taken back (not
  // started); for tests and stats.
  int64_t taken_ready() const { return taken_ready_; }
  int64_t taken_back() const { return taken_back_; }

 private:
  enum class State { kQueued, kRunning, kDone, kDropped };
  struct Pending {
    RunKey key;
    State state = State::kQueued;
    Result<std::vector<Record>> result = std::vector<Record>();
  };
  // What the tasks share with the iterator; they hold it, so a task that
  // starts after the destructor finds `stopping` set and leaves.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    int64_t running = 0;  // tasks reading now
  };
  // Drops the read-ahead of file `index` (a running read finishes into
  // nothing). REQUIRES: shared_->mu held.
  void DropLocked(size_t index);

  IteratorContext& ctx_;
  StageCounters* const counters_;
  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::vector<std::shared_ptr<Pending>> pending_;  // per file; under shared_->mu
  std::vector<int64_t> charged_;                   // per file; the iterator's thread
  int64_t taken_ready_ = 0;
  int64_t taken_back_ = 0;
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_RUN_READ_AHEAD_H_
