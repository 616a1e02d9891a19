// ParquetDataset: the rows of Parquet files (or batches of their rows) as
// elements with named components, on the file source (file_source.h),
// read by Apache Arrow C++'s libparquet (records/parquet_file.h).
//
//   auto ds = sluice::ParquetDataset({"train-0.parquet", "train-1.parquet"},
//                                    {.columns = {"image", "label"}, .batch_rows = 256});
//
// Elements: one row each (batch_rows = 0), or up to batch_rows rows each,
// cut from one row group's decoded columns with no copy (the fast path;
// a batch never crosses a row group, so the last batch of a row group may
// be shorter: follow with rebatch(N) for exact sizes). Components, in
// `columns` order: numbers, booleans, strings and binary as tensors
// (strings and binary view Arrow's buffers), fixed-size lists as shaped
// tensors, variable lists as their values (and "<name>.row_lengths" in
// batches, as VarLen features), structs flattened to "a.b", Hugging Face's
// image column (struct<bytes, path>) as the encoded image bytes.
// docs/parquet.md has the type table, the null rules and the errors.
//
// Every file is read at random (the footer says where each row group is):
// the cardinality is exact, and global_shuffle, RECORD sharding and
// restore pick rows exactly; a row group is decoded once and cached while
// its rows are read. Every file must have the first file's components.
//
// Thread-safety: the format is immutable and shared.
#ifndef SLUICE_PIPELINE_PARQUET_DATASET_H_
#define SLUICE_PIPELINE_PARQUET_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/file_source.h"
#include "sluice/records/parquet_file.h"  // ParquetAvailable()

namespace sluice {

struct ParquetDatasetOptions {
  // Top-level columns read, in this order (empty: all). Only their column
  // chunks are read.
  std::vector<std::string> columns;
  // > 0: elements are batches of up to this many rows (above).
  int64_t batch_rows = 0;
  // Nulls read as 0 / false / "" instead of being the row's error.
  bool fill_nulls = false;
  // The most bytes decoding one row group may hold (ParquetReadOptions).
  int64_t max_row_group_bytes = int64_t{1} << 30;
  // Estimated decoded bytes per read (runs of rows handed over at once).
  int64_t buffer_size = 1 << 20;
  // As TFRecordDatasetOptions::num_parallel_reads: files open at once.
  int64_t num_parallel_reads = 1;
  std::string name;
};

// The format whose element spec is `reference_file`'s, for FileSourceDataset
// and the CLI. FailedPrecondition in a build without Parquet.
Result<std::shared_ptr<const FileFormat>> ParquetFormat(const std::string& reference_file,
                                                        const ParquetDatasetOptions& options = {});

// The spec is taken from filenames[0] when the dataset is made; an error
// there is the dataset's error.
Dataset ParquetDataset(std::vector<std::string> filenames, ParquetDatasetOptions options = {});
// For interleave over list_files: maps a file name element to its rows.
DatasetFn parquet_files(ParquetDatasetOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_PARQUET_DATASET_H_
