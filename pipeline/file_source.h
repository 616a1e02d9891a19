// The file source: one mechanism under every record file format's dataset.
//
// A format (FileFormat) says how to open one file for reading in order
// (a RecordReader), how to open it for random access where it can (an
// IndexedRecordFile: an index, or records at computable offsets), and how a
// record becomes an element. FileSourceDataset gives every format the same:
//
//  - Order: with num_parallel_reads = N, N files are open at once and one
//    record is taken from each in turn; when a file ends the next file takes
//    its place in the rotation (tf.data's interleave with cycle_length N,
//    block_length 1). N = 1 reads the files one after another.
//  - Parallel reads: with N > 1 each open file's next buffer_size bytes of
//    records are read (checked, inflated) ahead in a task of the pipeline's
//    arena, charged to the RAM budget, off the consumer's thread.
//  - Random access: when use_index and every file opens for random access,
//    the cardinality is exact, element i is located in one step and read
//    with one read (global_shuffle, RECORD sharding, positional iterators);
//    in order, each file is read in runs of adjacent records.
//  - Save/restore by position: the rotation (which file in which slot at
//    which record); a restored reader seeks (RecordReader::Seek) or reads
//    forward to its record.
//  - FILE sharding: source_files() / with_source_files().
//  - Errors: a record that cannot be read (or made into an element) is an
//    error in its place and the next call goes on after it, so
//    ignore_errors skips exactly it; a reader that cannot move past an
//    error ends its file, and the next file takes the slot. Each element
//    carries its origin (file, record number) for the messages of later
//    stages.
//  - Stats: the stage's counters (reads ahead, reads in place, wait time)
//    under the format's kind.
//
// TFRecordDataset, TextLineDataset, CsvDataset, FixedLengthRecordDataset,
// WebDatasetDataset and NumpyDataset are formats on it; docs/pipeline.md,
// "Adding a file format", says how to add one.
//
// Ownership and thread-safety: a FileFormat is immutable once made and
// shared (shared_ptr<const>) by the dataset and its iterators, which call
// its const methods from several threads at once.
#ifndef SLUICE_PIPELINE_FILE_SOURCE_H_
#define SLUICE_PIPELINE_FILE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/records/record_source.h"

namespace sluice {

class FileFormat {
 public:
  virtual ~FileFormat() = default;
  // The dataset's kind ("TFRecordDataset"): its name in stats, errors,
  // DebugString and saved iterator state.
  virtual std::string kind() const = 0;
  // Settings for DebugString ("compression=GZIP"); empty by default.
  virtual std::string Describe() const { return {}; }
  // What its elements are. The default: one unnamed string scalar, the
  // record's bytes.
  virtual ElementSpec element_spec() const;

  // Opens `path` to read its records in order, reading `buffer_size` bytes
  // per read. An error names the file.
  virtual Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                                     size_t buffer_size) const = 0;
  // Opens `path` for random access; null (not an error) where this file
  // cannot be read at random (no index, compressed, the default): the
  // dataset then reads every file in order. An error is the dataset's (it
  // carries it from the start): return one only for a file that can be
  // read at random but is broken, or does not agree with the others.
  virtual Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexed(
      const std::string& path) const;

  // The element of `rec` (read from `path`). The default: the record's
  // bytes as a string scalar view (no copy). An error is the record's own
  // (the dataset passes it and goes on).
  virtual Result<Element> ToElement(const Record& rec, const std::string& path) const;
  // True when ToElement is the default: the dataset may then hand records
  // to batch as one string tensor of views, with no element per record.
  virtual bool records_are_elements() const { return true; }
};

struct FileSourceOptions {
  // Bytes per read (default 1 MiB), and the size of a block of records read
  // ahead.
  int64_t buffer_size = 1 << 20;
  // Files open at once, interleaved record by record; it decides the order.
  // kAutotune: kAutotuneCycleLength capped at the file count (not the CPU
  // count: the order must not depend on the machine). More than 1 also reads
  // ahead in parallel (above).
  int64_t num_parallel_reads = 1;
  // Random access where every file allows it (FileFormat::OpenIndexed).
  bool use_index = true;
  // The stage's name in stats (default: the format's kind).
  std::string name;
};

// The records of `files` in `format`, as the format's elements.
Dataset FileSourceDataset(std::vector<std::string> files, std::shared_ptr<const FileFormat> format,
                          FileSourceOptions options = {});
// For interleave over list_files: maps a file name element to its records.
DatasetFn file_source(std::shared_ptr<const FileFormat> format, FileSourceOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_FILE_SOURCE_H_
