// FixedLengthRecordDataset: tf.data.FixedLengthRecordDataset, on the file
// source (file_source.h): records of exactly record_bytes bytes between a
// header and a footer (records/fixed_length_reader.h says what a body that
// is not a multiple of record_bytes does, as TensorFlow does).
//
// Elements are string scalars (views into read buffers, no copy).
// Uncompressed files are read at random: exact cardinality, global_shuffle,
// RECORD sharding, one read per run of adjacent records. ZLIB and GZIP
// files are read in order (cardinality unknown).
//
// Thread-safety: the format is immutable and shared.
#ifndef SLUICE_PIPELINE_FIXED_LENGTH_RECORD_DATASET_H_
#define SLUICE_PIPELINE_FIXED_LENGTH_RECORD_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/file_source.h"
#include "sluice/records/compression.h"

namespace sluice {

struct FixedLengthRecordDatasetOptions {
  int64_t header_bytes = 0;
  int64_t footer_bytes = 0;
  // kNone, kZlib or kGzip (tf.data's "", "ZLIB", "GZIP").
  Compression compression = Compression::kNone;
  // Bytes per read (default 1 MiB).
  int64_t buffer_size = 1 << 20;
  // As TFRecordDatasetOptions::num_parallel_reads.
  int64_t num_parallel_reads = 1;
  std::string name;
};

// The format, for FileSourceDataset and the CLI. InvalidArgument for
// record_bytes < 1, negative header or footer sizes, or kAuto.
Result<std::shared_ptr<const FileFormat>> FixedLengthRecordFormat(
    int64_t record_bytes, const FixedLengthRecordDatasetOptions& options = {});

Dataset FixedLengthRecordDataset(std::vector<std::string> filenames, int64_t record_bytes,
                                 FixedLengthRecordDatasetOptions options = {});
// For interleave over list_files: maps a file name element to its records.
DatasetFn fixed_length_records(int64_t record_bytes, FixedLengthRecordDatasetOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_FIXED_LENGTH_RECORD_DATASET_H_
