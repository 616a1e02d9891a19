#include "record_formats.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

#include "sluice/pipeline/numpy_dataset.h"
#include "sluice/pipeline/parquet_dataset.h"
#include "sluice/records/compression.h"
#include "sluice/records/csv.h"
#include "sluice/records/csv_reader.h"
#include "sluice/records/fixed_length_reader.h"
#include "sluice/records/tar_index.h"
#include "sluice/records/tar_reader.h"
#include "sluice/records/text_line_reader.h"

namespace sluice::tools {
namespace {

const std::vector<std::string> kFormats = {"auto",        "tfrecord",   "text", "csv",    "tsv",
                                           "fixedlength", "webdataset", "npy",  "parquet"};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The format an extension names ("" if none does); a trailing .gz/.zz/.zlib
// is the compression's.
std::string FormatOfName(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (EndsWith(name, ".tgz")) return "webdataset";
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
      {".tsv", "tsv"},           {".tar", "webdataset"},     {".npy", "npy"},
      {".npz", "npy"},           {".parquet", "parquet"},
  };
  for (const Ext& e : kExts) {
    if (EndsWith(name, e.ext)) return std::string(e.format);
  }
  return "";
}

InputFormat TextFormat(Compression c) {
  InputFormat f;
  f.name = "text";
  f.open = [c](const std::string& path) { return OpenTextLineReader(path, {.compression = c}); };
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
      return Status::DataLoss(fmt::format(
          "{}:{}: column {}: {}", path, rec.line + error.line_offset, error.column, error.message));
    }
    if (!fields_per_record->has_value()) *fields_per_record = fields.size();
    if (fields.size() != **fields_per_record) {
      return Status::DataLoss(fmt::format("{}:{}: the record has {} fields, the first has {}", path,
                                          rec.line, fields.size(), **fields_per_record));
    }
    return Status::OK();
  };
  f.no_index = "CSV files are read in order";
  return f;
}

// A payload as `cat` shows it: short printable text as is, else its size.
std::string ShowBytes(std::string_view b) {
  const bool printable = b.size() <= 64 && std::all_of(b.begin(), b.end(), [](char c) {
                           return c >= 0x20 && c < 0x7f;
                         });
  return printable ? "'" + std::string(b) + "'" : fmt::format("<{} bytes>", b.size());
}

InputFormat FixedLengthFormat(Compression c, const FormatArgs& a) {
  InputFormat f;
  f.name = "fixedlength";
  const FixedLengthRecordOptions o{.record_bytes = static_cast<uint64_t>(a.record_bytes),
                                   .header_bytes = static_cast<uint64_t>(a.header_bytes),
                                   .footer_bytes = static_cast<uint64_t>(a.footer_bytes),
                                   .compression = c == Compression::kAuto ? Compression::kNone : c};
  f.open = [o](const std::string& path) { return OpenFixedLengthRecordReader(path, o); };
  if (o.compression == Compression::kNone) {
    f.count = [o](const std::string& path) -> Result<std::optional<uint64_t>> {
      SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const IndexedRecordFile> file,
                              OpenFixedLengthRecordFile(path, o));
      return std::optional<uint64_t>(file->num_records());
    };
  }
  f.no_index = "fixed-length records are at computable offsets";
  return f;
}

// A tar shard's samples: "key: ext=payload ...", every member listed.
InputFormat TarFormat(Compression c) {
  InputFormat f;
  f.name = "webdataset";
  const TarReaderOptions o{.compression = c};
  f.open = [o](const std::string& path) -> Result<std::unique_ptr<RecordReader>> {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TarReader> r, TarReader::Open(path, o));
    return std::unique_ptr<RecordReader>(std::move(r));
  };
  auto walk = [o](const Record& rec, const std::string& path, std::string* out) {
    return ForEachTarMember(rec.data, rec.offset, path, o.max_header_size,
                            [out](const TarMember& m) {
                              if (out == nullptr) return Status::OK();
                              if (out->empty()) *out = std::string(m.key) + ":";
                              *out += fmt::format(" {}={}", m.extension, ShowBytes(m.data));
                              return Status::OK();
                            });
  };
  f.show = [walk](const Record& rec, const std::string& path) -> Result<std::string> {
    std::string out;
    SLUICE_RETURN_IF_ERROR(walk(rec, path, &out));
    return out;
  };
  f.check = [walk](const Record& rec, const std::string& path) { return walk(rec, path, nullptr); };
  f.count = [o](const std::string& path) -> Result<std::optional<uint64_t>> {
    Result<std::shared_ptr<const IndexedRecordFile>> file = OpenIndexedTar(path, o);
    if (!file.ok()) return std::optional<uint64_t>();  // no index (or compressed): read
    return std::optional<uint64_t>((*file)->num_records());
  };
  f.index = [o](const std::string& path) -> Result<std::pair<std::string, uint64_t>> {
    SLUICE_ASSIGN_OR_RETURN(RecordIndex index, BuildAndSaveTarIndex(path, o));
    return std::pair<std::string, uint64_t>(TarIndexPath(path), index.size());
  };
  return f;
}

// .npy / .npz: rows, shown as the format's element.
Result<InputFormat> NpyFormat(const std::string& reference) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const FileFormat> format, NumpyFormat(reference));
  InputFormat f;
  f.name = "npy";
  f.open = [format](const std::string& path) { return format->Open(path, size_t{1} << 20); };
  f.show = [format](const Record& rec, const std::string& path) -> Result<std::string> {
    SLUICE_ASSIGN_OR_RETURN(Element e, format->ToElement(rec, path));
    return e.DebugString(16);
  };
  f.count = [format](const std::string& path) -> Result<std::optional<uint64_t>> {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const IndexedRecordFile> file,
                            format->OpenIndexed(path));
    if (file == nullptr) return std::optional<uint64_t>();
    return std::optional<uint64_t>(file->num_records());
  };
  f.no_index = "NumPy arrays are at computable offsets";
  return f;
}

// .parquet: rows, shown as the format's element (every column).
Result<InputFormat> ParquetInputFormat(const std::string& reference) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const FileFormat> format, ParquetFormat(reference));
  InputFormat f;
  f.name = "parquet";
  f.open = [format](const std::string& path) { return format->Open(path, size_t{1} << 20); };
  f.show = [format](const Record& rec, const std::string& path) -> Result<std::string> {
    SLUICE_ASSIGN_OR_RETURN(Element e, format->ToElement(rec, path));
    return e.DebugString(16);
  };
  // Reading checks the values too (a null is the row's error).
  f.check = [format](const Record& rec, const std::string& path) {
    return format->ToElement(rec, path).status();
  };
  f.count = [format](const std::string& path) -> Result<std::optional<uint64_t>> {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const IndexedRecordFile> file,
                            format->OpenIndexed(path));
    return std::optional<uint64_t>(file->num_records());
  };
  f.no_index = "a Parquet file's footer says where its rows are";
  return f;
}

}  // namespace

void AddFormatOptions(CLI::App* cmd, FormatArgs* a, const std::string& flag) {
  cmd->add_option(flag, a->format,
                  "The files' format; auto: by extension (.tfrecord, .txt/.jsonl, .csv, .tsv, "
                  ".tar/.tgz, .npy/.npz, .parquet, with .gz after it for GZIP), else tfrecord")
      ->check(CLI::IsMember(kFormats))
      ->capture_default_str();
  cmd->add_option("--record-bytes", a->record_bytes,
                  "fixedlength: the bytes of each record (FixedLengthRecordDataset's)");
  cmd->add_option("--header-bytes", a->header_bytes, "fixedlength: bytes before the records");
  cmd->add_option("--footer-bytes", a->footer_bytes, "fixedlength: bytes after the records");
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
  if (name == "webdataset") return TarFormat(c);
  if (name == "npy") return NpyFormat(path);
  if (name == "parquet") return ParquetInputFormat(path);
  if (name == "fixedlength") {
    if (a.record_bytes < 1 || a.header_bytes < 0 || a.footer_bytes < 0) {
      return Status::InvalidArgument(
          "--format fixedlength needs --record-bytes N (and header/footer bytes >= 0)");
    }
    return FixedLengthFormat(c, a);
  }
  return Status::InvalidArgument("unknown format '" + name + "'");
}

}  // namespace sluice::tools
