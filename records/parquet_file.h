// ParquetFile: random access to the rows of a Parquet file, or to batches
// of its rows, as records (record_source.h), read with Apache Arrow C++'s
// Parquet reader (libparquet) through core/file.h (so paths, file:// and
// object-store URIs all work).
//
// Records: with batch_rows = 0, record i is row i of the file; with
// batch_rows = N, a row group of R rows gives ceil(R / N) records of N rows
// (the last one of each row group shorter when N does not divide R):
// batches never cross row groups, so each is a zero-copy slice of one
// decoded row group. The count is exact from the file's footer.
//
// Row groups are the unit of reading: the first record asked of a row group
// decodes the asked columns of the whole row group (one column chunk after
// another; only those columns' bytes are read), and the decoded row group is
// cached (the last `cached_row_groups` of them) so the next records of it
// cost no read. Runs (ReadRun) never cross a row group. A row group that
// cannot be decoded is an error (DataLoss, naming the file, row group and
// column) for each of its records, found once and remembered.
//
// A Record of this file is not bytes: `data` is empty and `owner` keeps the
// decoded row group alive; ParquetRecordToElement makes the element (named
// components, below) of a record that a ParquetFile returned. Components
// view Arrow's buffers (numbers, strings and binary: no copy); only
// narrower integers, booleans (bit-packed in Arrow) and filled nulls are
// copied. docs/parquet.md has the type table and the null rules.
//
// Thread-safety: immutable after Open, but for the cache, which is locked;
// const methods may be called from several threads at once.
#ifndef SLUICE_RECORDS_PARQUET_FILE_H_
#define SLUICE_RECORDS_PARQUET_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/record_source.h"

namespace sluice {

// True when this build has Parquet (was built with Apache Arrow C++).
bool ParquetAvailable();

struct ParquetReadOptions {
  // Top-level columns read, as components in this order (empty: every
  // column, in the file's order). NotFound names the columns the file has.
  std::vector<std::string> columns;
  // > 0: records are batches of up to this many rows (above).
  int64_t batch_rows = 0;
  // A null value (a null row of a column, or a null inside a list) is an
  // error naming the file, row group, column and row unless this is true:
  // it then reads as 0, false or "" (parse_example's default for a missing
  // feature with no default_value given). A null list is always an empty
  // list (as a missing VarLen feature).
  bool fill_nulls = false;
  // Decoded row groups kept for the next records (at least 1).
  int cached_row_groups = 2;
  // The most bytes Arrow may hold while decoding the asked columns of one
  // row group (decompression buffers and decoded arrays). A row group
  // whose footer says its asked columns are larger, or whose decoding
  // asks for more (a decompression bomb, a lying page header), is
  // ResourceExhausted naming the file, row group and column. REQUIRES: > 0.
  int64_t max_row_group_bytes = int64_t{1} << 30;
};

// One component of the elements: its name ("a", "a.b" for a struct's child,
// "<key>.row_lengths" beside a variable list in batches), dtype and shape
// (-1 where it varies).
struct ParquetComponent {
  std::string name;
  DType dtype = DType::kString;
  Shape shape;
};

class ParquetFile final : public IndexedRecordFile {
 public:
  // Opens `path` and reads its footer. InvalidArgument for a column whose
  // type has no tensor form (docs/parquet.md), NotFound for a column the
  // file lacks, DataLoss for a file that is not Parquet; each names the
  // file. FailedPrecondition when this build has no Parquet.
  static Result<std::shared_ptr<const ParquetFile>> Open(const std::string& path,
                                                         const ParquetReadOptions& options = {});
  // As Open, over an open file (a memory file, say), named file->name().
  static Result<std::shared_ptr<const ParquetFile>> Open(std::shared_ptr<ReadableFile> file,
                                                         const ParquetReadOptions& options = {});
  ~ParquetFile() override;

  uint64_t num_records() const override;
  const std::string& path() const override;
  // From the footer: the row group's uncompressed bytes shared evenly by
  // its records (an estimate: what runs are sized by).
  RecordExtent extent(uint64_t i) const override;
  Result<std::vector<Record>> ReadRun(uint64_t first, size_t max_bytes,
                                      uint64_t stride = 1) const override;

  // What the elements are.
  const std::vector<ParquetComponent>& components() const;
  int64_t num_rows() const;
  int num_row_groups() const;
  int64_t batch_rows() const;

  struct Impl;

 private:
  explicit ParquetFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The element of `rec`, a record a ParquetFile returned: its components as
// ParquetFile::components() says. An error for a null (unless fill_nulls)
// names the file, row group, column and row; InvalidArgument if `rec` is
// not a ParquetFile's record.
Result<Element> ParquetRecordToElement(const Record& rec);

}  // namespace sluice

#endif  // SLUICE_RECORDS_PARQUET_FILE_H_
