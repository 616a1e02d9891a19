// RecordBlock: records taken from a RecordReader a block at a time.
//
// A file source (file_source.h) with num_parallel_reads > 1 over files read
// in order (no random access: no index, or compressed) takes each open file's records a block at a time
// (ReadRecordBlock: the reader's Next() until buffer_size bytes of records,
// an error or the end), and reads each file's next block ahead in a task
// (ReadAhead<RecordBlock>, read_ahead.h) while it hands out the block
// before: the open files are read, checked and inflated in parallel and
// beside the stages above, as tf.data's num_parallel_reads does. A block
// read ahead is the one the iterator would read next from the same reader,
// so what it returns (records, errors and where they fall) does not depend
// on read-ahead.
//
// Thread-safety: a reader is used by one thread at a time (the iterator's,
// or the task reading its next block).
#ifndef SLUICE_PIPELINE_INTERNAL_RECORD_BLOCK_H_
#define SLUICE_PIPELINE_INTERNAL_RECORD_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "sluice/pipeline/internal/context.h"
#include "sluice/records/record_source.h"

namespace sluice::pipeline_internal {

// What one RecordReader::Next() call gave: a record, the end (nullopt) or
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
RecordBlock ReadRecordBlock(RecordReader& reader, size_t max_bytes, IteratorContext& ctx);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_RECORD_BLOCK_H_
