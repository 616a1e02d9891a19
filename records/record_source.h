// Record, RecordReader, IndexedRecordFile: what a record file format's
// reader gives the pipeline's one file source (pipeline/file_source.h).
//
// A format (TFRecord, text lines, CSV, fixed-length records, tar shards,
// NumPy arrays) is a sequential reader of one file (RecordReader) and,
// where the format allows it, a random-access view of one file
// (IndexedRecordFile: an index, or records at computable offsets). The file
// source gives every format the same rotation of open files, reads ahead in
// tasks, restore by position, FILE and RECORD sharding, random access and
// exact cardinality, and ignore_errors that skips exactly the bad record.
//
// Records are views: a Record's `data` lies in a buffer its `owner` keeps
// alive, so keeping a Record (or a string tensor made from it) never copies
// and never dangles.
//
// Errors name the file, the record number and the byte offset (or line).
// After an error a reader either moved past the bad record
// (next_record_number() grew: the caller may go on, and the bad record is
// skipped exactly) or could not (it stays: the caller ends the file there).
//
// Thread-safety: a RecordReader is used by one thread at a time (it may
// move between threads); an IndexedRecordFile is immutable after it is
// opened, and its const methods may be called from several threads at once.
#ifndef SLUICE_RECORDS_RECORD_SOURCE_H_
#define SLUICE_RECORDS_RECORD_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/buffer.h"
#include "sluice/core/result.h"

namespace sluice {

struct Record {
  // The record's bytes; valid while `owner` (or a copy of it) lives.
  std::string_view data;
  Buffer owner;
  // Byte offset of the record in the uncompressed stream (the file offset
  // for uncompressed files): of a TFRecord's header, a line's first byte, a
  // tar sample's first header.
  uint64_t offset = 0;
  // 0-based position of the record in the file.
  uint64_t number = 0;
  // Text formats: the 1-based line the record starts on (0: not known).
  uint64_t line = 0;
};

// Where record i lies in an uncompressed file: what a reader of runs of
// adjacent records needs to know to size its reads.
struct RecordExtent {
  uint64_t offset = 0;
  uint64_t length = 0;  // framing included
};

// Reads the records of one file in order.
class RecordReader {
 public:
  virtual ~RecordReader() = default;
  // The next record, or nullopt at the end of the file. See above for what
  // an error leaves.
  virtual Result<std::optional<Record>> Next() = 0;
  // Records returned (or passed with an error) so far, or the position
  // after Seek.
  virtual uint64_t next_record_number() const = 0;
  // Positions the reader so that Next() returns record `number`: true. False
  // when this reader cannot seek there (the default; an index is missing,
  // say): the caller reads forward to it instead. OutOfRange past the last
  // record.
  virtual Result<bool> Seek(uint64_t number);
  // Bytes of read buffers this reader holds (some possibly shared with
  // records it returned), for RAM accounting.
  virtual size_t buffer_bytes() const = 0;
  // The file's name, as errors give it.
  virtual const std::string& filename() const = 0;
};

// Random access to the records of one file.
class IndexedRecordFile {
 public:
  virtual ~IndexedRecordFile() = default;
  virtual uint64_t num_records() const = 0;
  // The path, as errors give it.
  virtual const std::string& path() const = 0;
  // Where record i lies. REQUIRES: i < num_records().
  virtual RecordExtent extent(uint64_t i) const = 0;
  // Records first, first + stride, ... of the longest run of adjacent
  // records from `first` whose bytes fit in max_bytes (at least one),
  // read with one read and each checked as the format checks records.
  // OutOfRange if first >= num_records(); an error of record `first` is
  // its own (a later record's error ends the run before it).
  virtual Result<std::vector<Record>> ReadRun(uint64_t first, size_t max_bytes,
                                              uint64_t stride = 1) const = 0;
  // Record i alone. The default reads a run of one.
  virtual Result<Record> Read(uint64_t i) const;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_RECORD_SOURCE_H_
