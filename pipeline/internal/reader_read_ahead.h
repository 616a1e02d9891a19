// ReaderReadAhead: reads blocks of records from an open TFRecordReader in
// a task, while the iterator hands out the block before.
//
// TFRecordDataset with num_parallel_reads > 1 over files without an index
// (or compressed ones) reads each open file with a TFRecordReader. Read in
// the iterator's Next(), each file's reading, checking and decompressing
// runs in whatever thread pulls the records, one thread at a time. Here the
// iterator takes a file's records a block at a time (ReadRecordBlock: the
// reader's Next() until buffer_size bytes of records, an error or the end),
// and when it takes a block, the file's next block is read in a task of the
// pipeline's arena: the open files are read (and decompressed) in parallel
// and beside the stages above, as tf.data's num_parallel_reads does.
//
// A block read ahead is the block the iterator would read itself next, from
// the same reader: what the iterator returns (records, errors and where
// they fall) does not depend on read-ahead. A read not started is taken
// back (the iterator reads the block itself); one in progress is waited
// for. A read-ahead is charged to the RAM budget for its max_bytes until it
// is taken or dropped, and is not started when that does not fit.
//
// Ownership: a read-ahead shares the reader (shared_ptr) with its task, so
// a slot may drop its reader at any time. The destructor waits for reads in
// progress (one block each); a queued task then finds it gone and leaves.
// `ctx` and `counters` must outlive it.
//
// Thread-safety: the iterator calls Start() and Take() from one thread at a
// time, and uses a reader only while it has no read-ahead (Pending()
// false); tasks synchronize with it through an internal mutex.
#ifndef SLUICE_PIPELINE_INTERNAL_READER_READ_AHEAD_H_
#define SLUICE_PIPELINE_INTERNAL_READER_READ_AHEAD_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "sluice/core/result.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice::pipeline_internal {

// What one TFRecordReader::Next() call gave: a record, the end (nullopt) or
// an error; `before`: the reader's next_record_number() before the call
// (the record's number); `moved`: whether the call moved the reader on (a
// record whose data is corrupt is passed; a truncated tail is not).
struct ReadItem {
  Result<std::optional<Record>> rec = std::optional<Record>();
  uint64_t before = 0;
  bool moved = false;
};

// Consecutive Next() calls of one reader and its state after them.
struct RecordBlock {
  std::deque<ReadItem> items;
  uint64_t after = 0;        // next_record_number() after the block
  int64_t buffer_bytes = 0;  // buffer_bytes() after the block
  bool stopped = false;      // the block ends with an error or the end
};

// Reads records from `reader` until their bytes reach max_bytes (at least
// one call), after an error or the end, or once `ctx` is cancelled.
RecordBlock ReadRecordBlock(TFRecordReader& reader, size_t max_bytes, IteratorContext& ctx);

class ReaderReadAhead {
 public:
  // A block being read ahead for one reader; opaque to the iterator.
  struct Pending;

  // `counters`: the stage's, whose CPU share a read holds while it runs.
  ReaderReadAhead(IteratorContext& ctx, StageCounters* counters);
  ~ReaderReadAhead();
  ReaderReadAhead(const ReaderReadAhead&) = delete;
  ReaderReadAhead& operator=(const ReaderReadAhead&) = delete;

  // Starts reading the next block of `reader` in a task; the handle is
  // null when its charge does not fit in the RAM budget. The iterator keeps
  // the handle beside the reader and does not use the reader until Take().
  std::shared_ptr<Pending> Start(std::shared_ptr<TFRecordReader> reader, size_t max_bytes);
  // The block read ahead (waiting for a read in progress, holding no CPU
  // share), or nullopt for a read taken back before it started (the
  // iterator then reads the block itself). Resets `p`.
  std::optional<RecordBlock> Take(std::shared_ptr<Pending>& p);
  // Gives up a read-ahead (a read in progress finishes into nothing; it
  // keeps its reader alive until then). Resets `p`; nothing for null.
  void Drop(std::shared_ptr<Pending>& p);

 private:
  struct Shared;
  IteratorContext& ctx_;
  StageCounters* const counters_;
  const std::shared_ptr<Shared> shared_;
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_READER_READ_AHEAD_H_
