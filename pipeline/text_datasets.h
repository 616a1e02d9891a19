// TextLineDataset, CsvDataset and make_csv_dataset: text files as datasets
// (tf.data.TextLineDataset, tf.data.experimental.CsvDataset and
// make_csv_dataset), formats on the one file source (file_source.h): files
// in rotation with num_parallel_reads, reads ahead, restore by position,
// FILE sharding, ignore_errors that skips exactly the bad line or row.
//
//   auto lines = sluice::TextLineDataset({"a.txt", "b.txt.gz"});
//   auto rows = sluice::CsvDataset({"train.csv"},
//                                  {sluice::CsvDefault::Required(sluice::DType::kFloat32),
//                                   sluice::CsvDefault::Value(int64_t{0}),
//                                   sluice::CsvDefault::Value("unknown")},
//                                  {.header = true});
//
// Thread-safety: the functions may be called from any thread; the datasets
// are values (dataset.h).
#ifndef SLUICE_PIPELINE_TEXT_DATASETS_H_
#define SLUICE_PIPELINE_TEXT_DATASETS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/dtype.h"
#include "sluice/core/tensor.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/file_source.h"
#include "sluice/records/compression.h"

namespace sluice {

// ------------------------------------------------------------ text lines

struct TextLineDatasetOptions {
  // tf.data's compression_type: "" (kNone), "GZIP", "ZLIB"; kAuto tells
  // them apart from the first bytes.
  Compression compression = Compression::kAuto;
  // Bytes per read (default 1 MiB).
  int64_t buffer_size = 1 << 20;
  // Files read at once, line by line in turn (file_source.h); kAutotune.
  int64_t num_parallel_reads = 1;
  // The longest line accepted (default 256 MiB): a longer one is an error
  // naming the file, line and offset, and is skipped without being held.
  int64_t max_line_size = int64_t{256} << 20;
  std::string name;
};

// The lines of `files` as string scalars, without their "\n" (every "\r"
// dropped, as TensorFlow does; records/text_line_reader.h).
Dataset TextLineDataset(std::vector<std::string> files, TextLineDatasetOptions options = {});
// For interleave over list_files.
DatasetFn textlines(TextLineDatasetOptions options = {});
// The format ("TextLineDataset"), for the CLI and tools.
std::shared_ptr<const FileFormat> TextLineFileFormat(const TextLineDatasetOptions& options = {});

// ------------------------------------------------------------------- CSV

// One column's default (tf.data's record_defaults entry): a scalar value of
// its dtype, used when the field is empty or na_value; or only a dtype, and
// then the column is required (an empty field is an error).
struct CsvDefault {
  DType dtype = DType::kString;
  std::optional<Tensor> value;  // a scalar of `dtype`; none: required

  static CsvDefault Required(DType dtype) { return {dtype, std::nullopt}; }
  static CsvDefault Value(int32_t v) { return {DType::kInt32, Tensor::Scalar(v)}; }
  static CsvDefault Value(int64_t v) { return {DType::kInt64, Tensor::Scalar(v)}; }
  static CsvDefault Value(float v) { return {DType::kFloat32, Tensor::Scalar(v)}; }
  static CsvDefault Value(double v) { return {DType::kFloat64, Tensor::Scalar(v)}; }
  static CsvDefault Value(std::string_view v) { return {DType::kString, Tensor::StringScalar(v)}; }
  static CsvDefault Value(const char* v) { return Value(std::string_view(v)); }
};

struct CsvDatasetOptions {
  // As TextLineDatasetOptions (tf.data's default is "": kNone).
  Compression compression = Compression::kAuto;
  int64_t buffer_size = 1 << 20;
  // Skip each file's first record (the column names).
  bool header = false;
  char field_delim = ',';
  // RFC 4180 quotes; false: '"' is an ordinary character.
  bool use_quote_delim = true;
  // A field equal to this (quoted or not) counts as empty.
  std::string na_value;
  // The columns to read (0-based, strictly increasing), one per default; or
  // the columns to leave out. At most one of the two.
  std::vector<int64_t> select_cols;
  std::vector<int64_t> exclude_cols;
  int64_t num_parallel_reads = 1;
  // The longest record accepted, as TextLineDatasetOptions::max_line_size.
  int64_t max_record_size = int64_t{256} << 20;
  std::string name;
};

// The rows of CSV `files`: one scalar per column read, typed by
// `record_defaults` (int32, int64, float32, float64 or string). A row with
// the wrong number of fields, a bad number, an empty required field or an
// open quote is InvalidArgument "FILE:LINE: column C: ..." (1-based), in
// the row's place: ignore_errors skips exactly that row. A bad argument is
// InvalidArgument when the dataset is made (at its first use).
Dataset CsvDataset(std::vector<std::string> files, std::vector<CsvDefault> record_defaults,
                   CsvDatasetOptions options = {});
DatasetFn csv_files(std::vector<CsvDefault> record_defaults, CsvDatasetOptions options = {});
// The format ("CsvDataset"); `column_names` (empty, or one per default)
// name the element's components. InvalidArgument for bad arguments.
Result<std::shared_ptr<const FileFormat>> CsvFileFormat(std::vector<CsvDefault> record_defaults,
                                                         const CsvDatasetOptions& options = {},
                                                         std::vector<std::string> column_names = {});

// ------------------------------------------------------- make_csv_dataset

struct MakeCsvDatasetOptions {
  // Names of the columns; empty: the first file's header.
  std::vector<std::string> column_names;
  // One per selected column; empty: inferred from the first
  // num_rows_for_inference rows (int32 -> int64 -> float32 -> float64 ->
  // string, the least permissive type every value fits; defaults 0 or "").
  std::vector<CsvDefault> column_defaults;
  // This column becomes the label: the last component, named label_name.
  std::string label_name;
  // Columns to read, by name; empty: all.
  std::vector<std::string> select_columns;
  char field_delim = ',';
  bool use_quote_delim = true;
  std::string na_value;
  bool header = true;
  // Passes over the data; -1: forever (tf.data's None), and then batches
  // are all full (drop_remainder).
  int64_t num_epochs = -1;
  bool shuffle = true;
  int64_t shuffle_buffer_size = 10000;
  std::optional<uint64_t> shuffle_seed;
  int64_t num_parallel_reads = 1;
  int64_t num_rows_for_inference = 100;
  Compression compression = Compression::kAuto;
  bool ignore_errors = false;
};

// Batches of batch_size rows of the CSV files matching `file_pattern`, with
// named components (one per selected column, in file order; the label last),
// as tf.data.experimental.make_csv_dataset builds them: files listed (and
// shuffled), read num_parallel_reads at once, rows shuffled, repeated,
// batched, prefetched. Errors (no file matches, a header that differs,
// duplicate or unknown names, a row inference cannot read) name the file.
Result<Dataset> MakeCsvDataset(const std::string& file_pattern, int64_t batch_size,
                               MakeCsvDatasetOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_TEXT_DATASETS_H_
