#include "record_formats.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

#include "sluice/records/compression.h"
#include "sluice/records/csv.h"
#include "sluice/records/csv_reader.h"
#include "sluice/records/text_line_reader.h"

namespace sluice::tools {
namespace {

const std::vector<std::string> kFormats = {"auto", "tfrecord", "text", "csv", "tsv"};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The format an extension names ("" if none does); a trailing .gz/.zz/.zlib
// is the compression's.
std::string FormatOfName(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view z : {".gz", ".zz", ".zlib"}) {
    if (EndsWith(name, z)) {
      name.resize(name.size() - z.size());
      break;
    }
  }
  struct Ext {
    std::string_view ext, format;
  };
  static constexpr Ext kExts[] = {
      {".tfrecord", "tfrecord"}, {".tfrecords", "tfrecord"}, {".tfr", "tfrecord"},
      {".txt", "text"},          {".text", "text"},          {".jsonl", "text"},
      {".ndjson", "text"},       {".log", "text"},           {".csv", "csv"},
      {".tsv", "tsv"},
  };
  for (const Ext& e : kExts) {
    if (EndsWith(name, e.ext)) return std::string(e.format);
  }
  return "";
}

InputFormat TextFormat(Compression c) {
  InputFormat f;
  f.name = "text";
  f.open = [c](const std::string& path) {
    return OpenTextLineReader(path, {.compression = c});
  };
  f.no_index = "text files are read in order";
  return f;
}

InputFormat CsvFormat(Compression c, char delim) {
  InputFormat f;
  f.name = delim == '\t' ? "tsv" : "csv";
  const CsvDialect dialect{.field_delim = delim};
  f.open = [c, dialect](const std::string& path) {
    return OpenCsvReader(path, {.compression = c, .dialect = dialect});
  };
  // Every record splits, into as many fields as the first.
  auto fields_per_record = std::make_shared<std::optional<size_t>>();
  f.check = [dialect, fields_per_record](const Record& rec, const std::string& path) -> Status {
    std::vector<CsvField> fields;
    std::string scratch;
    CsvSyntaxError error;
    if (!SplitCsvRecord(rec.data, dialect, &fields, &scratch, &error)) {
      return Status::DataLoss(fmt::format("{}:{}: column {}: {}", path,
                                          rec.line + error.line_offset, error.column,
                                          error.message));
    }
    if (!fields_per_record->has_value()) *fields_per_record = fields.size();
    if (fields.size() != **fields_per_record) {
      return Status::DataLoss(fmt::format("{}:{}: the record has {} fields, the first has {}",
                                          path, rec.line, fields.size(), **fields_per_record));
    }
    return Status::OK();
  };
  f.no_index = "CSV files are read in order";
  return f;
}

}  // namespace

void AddFormatOptions(CLI::App* cmd, FormatArgs* a, const std::string& flag) {
  cmd->add_option(flag, a->format,
                  "The files' format; auto: by extension (.tfrecord, .txt/.jsonl, .csv, .tsv, "
                  "with .gz after it for GZIP), else tfrecord")
      ->check(CLI::IsMember(kFormats))
      ->capture_default_str();
}

Result<InputFormat> InputFormatFor(const std::string& path, const FormatArgs& a) {
  std::string name = a.format;
  if (name == "auto") name = FormatOfName(path);
  if (name.empty()) name = "tfrecord";
  SLUICE_ASSIGN_OR_RETURN(Compression c, ParseCompression(a.compression));
  if (name == "tfrecord") return InputFormat{.name = "tfrecord"};
  if (name == "text") return TextFormat(c);
  if (name == "csv") return CsvFormat(c, ',');
  if (name == "tsv") return CsvFormat(c, '\t');
  return Status::InvalidArgument("unknown format '" + name + "'");
}

}  // namespace sluice::tools
