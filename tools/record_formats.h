// The record formats `sluice cat`, `count`, `verify` and `index` read: chosen
// by --format, else by the file's extension (.tfrecord, .txt, .csv, .tsv,
// .tar, .npy, .parquet...; .gz after it means GZIP), else TFRecord.
//
// Each format is its records/ reader (the RecordReader a file source
// reads), with what the commands need beside it: how to print a record,
// what a record must satisfy to pass `verify`, an exact count without
// reading (an index, or records at computable offsets) and an index writer
// where the format has one. TFRecord files keep the commands' own paths
// (CRCs streamed, FILE.idx); the other formats go through this table.
//
// Values; functions of the file system only; thread-compatible.
#ifndef SLUICE_TOOLS_RECORD_FORMATS_H_
#define SLUICE_TOOLS_RECORD_FORMATS_H_

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sluice/core/result.h"
#include "sluice/records/record_source.h"

namespace sluice::tools {

struct FormatArgs {
  std::string format = "auto";       // --format
  std::string compression = "auto";  // --compression
  int64_t record_bytes = 0;          // fixed-length records
  int64_t header_bytes = 0;
  int64_t footer_bytes = 0;
};

// Adds --format (under `flag`, e.g. "--format" or "--file-format") and the
// fixed-length options to `cmd`. --compression is the command's own.
void AddFormatOptions(CLI::App* cmd, FormatArgs* args, const std::string& flag);

struct InputFormat {
  std::string name;  // "tfrecord", "text", "csv", "fixedlength", "webdataset", "npy", "parquet"
  // Opens a file to read its records in order.
  std::function<Result<std::unique_ptr<RecordReader>>(const std::string& path)> open;
  // How `cat` shows a record (escaped, hex, raw apply to this text); null:
  // the record's bytes.
  std::function<Result<std::string>(const Record& rec, const std::string& path)> show;
  // What `verify` checks beyond reading (CSV: the record splits and has the
  // first record's field count); null: reading is the check.
  std::function<Status(const Record& rec, const std::string& path)> check;
  // The exact count without reading every record (an index, or computable
  // offsets); nullopt: count by reading.
  std::function<Result<std::optional<uint64_t>>(const std::string& path)> count;
  // Writes the file's index (`sluice index`) and returns its path and
  // record count; null: the format needs none (says why in `no_index`).
  std::function<Result<std::pair<std::string, uint64_t>>(const std::string& path)> index;
  std::string no_index;
};

// The format of `path` for `args` (InvalidArgument for an unknown --format
// or missing fixed-length sizes).
Result<InputFormat> InputFormatFor(const std::string& path, const FormatArgs& args);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_RECORD_FORMATS_H_
