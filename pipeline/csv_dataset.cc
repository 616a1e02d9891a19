// CsvDataset: the rows of CSV files (records/csv_reader.h, records/csv.h)
// as one typed scalar per column read, on the one file source. A row is
// split and typed in ToElement, so a bad row is an error in its place.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sluice/pipeline/text_datasets.h"
#include "sluice/records/csv.h"
#include "sluice/records/csv_reader.h"

namespace sluice {
namespace {

bool IsCsvType(DType d) {
  return d == DType::kInt32 || d == DType::kInt64 || d == DType::kFloat32 || d == DType::kFloat64 ||
         d == DType::kString;
}

Status CheckColumns(const std::vector<int64_t>& cols, const char* what) {
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i] < 0) return Status::InvalidArgument(fmt::format("{} must be >= 0", what));
    if (i > 0 && cols[i] <= cols[i - 1]) {
      return Status::InvalidArgument(fmt::format("{} must be strictly increasing", what));
    }
  }
  return Status::OK();
}

// Parses `text` as a T into the (suitably aligned) bytes at `dst`.
template <typename T>
bool ParseInto(std::string_view text, char* dst) {
  T v{};
  if (!ParseCsvNumber(text, &v)) return false;
  std::memcpy(dst, &v, sizeof(T));
  return true;
}

// True when `part` lies inside `whole` (a field not unquoted into scratch).
bool Within(std::string_view part, std::string_view whole) {
  const auto p = reinterpret_cast<uintptr_t>(part.data());
  const auto w = reinterpret_cast<uintptr_t>(whole.data());
  return p >= w && p + part.size() <= w + whole.size();
}

class CsvFormat final : public FileFormat {
 public:
  CsvFormat(std::vector<CsvDefault> defaults, const CsvDatasetOptions& o,
            std::vector<std::string> names)
      : defaults_(std::move(defaults)), opts_(o) {
    reader_ = {.compression = o.compression,
               .buffer_size = static_cast<size_t>(o.buffer_size),
               .dialect = {.field_delim = o.field_delim, .use_quote_delim = o.use_quote_delim},
               .header = o.header,
               .max_record_size = static_cast<uint64_t>(o.max_record_size)};
    // columns_[k]: the file column of output k.
    const size_t n = defaults_.size();
    if (!o.select_cols.empty()) {
      for (int64_t c : o.select_cols) columns_.push_back(static_cast<size_t>(c));
      min_fields_ = columns_.back() + 1;
      exact_ = false;
    } else {
      size_t e = 0;
      for (size_t c = 0; columns_.size() < n; ++c) {
        if (e < o.exclude_cols.size() && static_cast<size_t>(o.exclude_cols[e]) == c) {
          ++e;
          continue;
        }
        columns_.push_back(c);
      }
      min_fields_ = n + o.exclude_cols.size();
      exact_ = true;
    }
    if (!names.empty()) names_ = std::make_shared<const std::vector<std::string>>(std::move(names));
  }

  std::string kind() const override { return "CsvDataset"; }
  std::string Describe() const override {
    std::string types;
    for (const CsvDefault& d : defaults_) {
      types += (types.empty() ? "" : ",") + std::string(DTypeName(d.dtype)) + (d.value ? "" : "!");
    }
    return fmt::format("compression={}, header={}, columns=[{}]",
                       CompressionName(opts_.compression), opts_.header, types);
  }
  ElementSpec element_spec() const override {
    std::vector<ComponentSpec> c;
    for (size_t k = 0; k < defaults_.size(); ++k) {
      c.push_back({names_ ? (*names_)[k] : "", defaults_[k].dtype, Shape{}});
    }
    return ElementSpec(std::move(c));
  }
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                             size_t buffer_size) const override {
    CsvReaderOptions o = reader_;
    o.buffer_size = buffer_size;
    return OpenCsvReader(path, o);
  }
  bool records_are_elements() const override { return false; }

  Result<Element> ToElement(const Record& rec, const std::string& path) const override {
    thread_local std::vector<CsvField> fields;
    thread_local std::string scratch;
    CsvSyntaxError syntax;
    if (!SplitCsvRecord(rec.data, reader_.dialect, &fields, &scratch, &syntax)) {
      return Error(path, rec.line + syntax.line_offset, syntax.column, syntax.message);
    }
    if (fields.size() < min_fields_ || (exact_ && fields.size() > min_fields_)) {
      const size_t column = std::min(fields.size(), min_fields_) + 1;
      const uint64_t line = rec.line + fields[std::min(fields.size(), min_fields_) - 1].line_offset;
      return Error(path, line, column,
                   fmt::format("the record has {} fields, {} expected", fields.size(),
                               exact_ ? fmt::format("{}", min_fields_)
                                      : fmt::format("at least {}", min_fields_)));
    }
    // One buffer per row holds every parsed value (an 8-byte slot per
    // numeric column, a 16-byte string_view per string column, then the
    // bytes of string fields that are not in the record: unquoted by
    // SplitCsvRecord into scratch); the scalars are views into it. A
    // tensor of its own per field made the row cost ~10 small aligned
    // allocations, half of the case's CPU time in malloc.
    // A field still in the record is borrowed from its read buffer.
    auto borrowed = [&rec](std::string_view text) { return rec.owner && Within(text, rec.data); };
    size_t slots = 0, copied = 0;
    for (size_t k = 0; k < defaults_.size(); ++k) {
      slots += defaults_[k].dtype == DType::kString ? sizeof(std::string_view) : 8;
      const std::string_view text = fields[columns_[k]].text;
      if (defaults_[k].dtype == DType::kString && !borrowed(text)) copied += text.size();
    }
    SLUICE_ASSIGN_OR_RETURN(Buffer row, Buffer::Allocate(slots + copied));
    char* const base = reinterpret_cast<char*>(row.data());
    char* bytes = base + slots;
    size_t at = 0;
    std::vector<Tensor> out;
    out.reserve(defaults_.size());
    for (size_t k = 0; k < defaults_.size(); ++k) {
      const CsvField& f = fields[columns_[k]];
      const CsvDefault& d = defaults_[k];
      const size_t slot = at;
      at += d.dtype == DType::kString ? sizeof(std::string_view) : 8;
      if (f.text.empty() || (!opts_.na_value.empty() && f.text == opts_.na_value)) {
        if (!d.value) {
          return Error(path, rec.line + f.line_offset, columns_[k] + 1,
                       f.text.empty() ? "the field is empty and the column is required"
                                      : "the field is na_value and the column is required");
        }
        out.push_back(*d.value);
        continue;
      }
      bool ok = true;
      switch (d.dtype) {
        case DType::kInt32: ok = ParseInto<int32_t>(f.text, base + slot); break;
        case DType::kInt64: ok = ParseInto<int64_t>(f.text, base + slot); break;
        case DType::kFloat32: ok = ParseInto<float>(f.text, base + slot); break;
        case DType::kFloat64: ok = ParseInto<double>(f.text, base + slot); break;
        default: {
          std::string_view text = f.text;
          const bool in_record = borrowed(text);
          if (!in_record) {
            std::memcpy(bytes, text.data(), text.size());
            text = std::string_view(bytes, text.size());
            bytes += text.size();
          }
          new (base + slot) std::string_view(text);
          // The bytes live in the record's read buffer or in the row.
          std::vector<Buffer> owners{in_record ? rec.owner : row};
          SLUICE_ASSIGN_OR_RETURN(Tensor t,
                                  Tensor::FromStringViews(Shape{}, row, std::move(owners), slot));
          out.push_back(std::move(t));
          continue;
        }
      }
      if (!ok) {
        const std::string_view shown = f.text.substr(0, 64);
        return Error(path, rec.line + f.line_offset, columns_[k] + 1,
                     fmt::format("'{}{}' is not a valid {}", shown,
                                 shown.size() < f.text.size() ? "..." : "", DTypeName(d.dtype)));
      }
      SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromBuffer(d.dtype, Shape{}, row, slot));
      out.push_back(std::move(t));
    }
    if (names_) return Element(std::move(out), names_);
    return Element(std::move(out));
  }

 private:
  static Status Error(const std::string& path, uint64_t line, size_t column, std::string_view msg) {
    return Status::InvalidArgument(fmt::format("{}:{}: column {}: {}", path, line, column, msg));
  }
  std::vector<CsvDefault> defaults_;
  CsvDatasetOptions opts_;
  CsvReaderOptions reader_;
  std::vector<size_t> columns_;
  size_t min_fields_ = 0;
  bool exact_ = true;
  std::shared_ptr<const std::vector<std::string>> names_;
};

FileSourceOptions SourceOptions(const CsvDatasetOptions& o) {
  return {.buffer_size = o.buffer_size,
          .num_parallel_reads = o.num_parallel_reads,
          .use_index = false,
          .name = o.name};
}

}  // namespace

Result<std::shared_ptr<const FileFormat>> CsvFileFormat(std::vector<CsvDefault> defaults,
                                                        const CsvDatasetOptions& o,
                                                        std::vector<std::string> names) {
  auto bad = [](std::string_view msg) {
    return Status::InvalidArgument(fmt::format("CsvDataset: {}", msg));
  };
  if (defaults.empty()) return bad("record_defaults is empty");
  for (size_t k = 0; k < defaults.size(); ++k) {
    const CsvDefault& d = defaults[k];
    if (!IsCsvType(d.dtype)) {
      return bad(
          fmt::format("record_defaults[{}] is {}; expected int32, int64, float32, "
                      "float64 or string",
                      k, DTypeName(d.dtype)));
    }
    if (d.value && (d.value->dtype() != d.dtype || d.value->num_elements() != 1)) {
      return bad(fmt::format("record_defaults[{}]: the default must be one {} value", k,
                             DTypeName(d.dtype)));
    }
  }
  if (!o.select_cols.empty() && !o.exclude_cols.empty()) {
    return bad("either select_cols or exclude_cols should be empty");
  }
  SLUICE_RETURN_IF_ERROR(CheckColumns(o.select_cols, "select_cols").WithContext("CsvDataset"));
  SLUICE_RETURN_IF_ERROR(CheckColumns(o.exclude_cols, "exclude_cols").WithContext("CsvDataset"));
  if (!o.select_cols.empty() && o.select_cols.size() != defaults.size()) {
    return bad(fmt::format("select_cols has {} columns but record_defaults {}; they must match",
                           o.select_cols.size(), defaults.size()));
  }
  if (!names.empty() && names.size() != defaults.size()) return bad("one name per column");
  if (o.buffer_size <= 0 || o.max_record_size <= 0) {
    return bad("buffer_size and max_record_size must be positive");
  }
  SLUICE_RETURN_IF_ERROR(
      CheckCsvDialect({.field_delim = o.field_delim, .use_quote_delim = o.use_quote_delim})
          .WithContext("CsvDataset"));
  return std::shared_ptr<const FileFormat>(
      std::make_shared<CsvFormat>(std::move(defaults), o, std::move(names)));
}

Dataset CsvDataset(std::vector<std::string> files, std::vector<CsvDefault> record_defaults,
                   CsvDatasetOptions options) {
  Result<std::shared_ptr<const FileFormat>> format =
      CsvFileFormat(std::move(record_defaults), options);
  if (!format.ok()) return Dataset::FromError(format.status());
  return FileSourceDataset(std::move(files), *format, SourceOptions(options));
}

DatasetFn csv_files(std::vector<CsvDefault> record_defaults, CsvDatasetOptions options) {
  Result<std::shared_ptr<const FileFormat>> format =
      CsvFileFormat(std::move(record_defaults), options);
  if (!format.ok()) {
    return [status = format.status()](const Element&) -> Result<Dataset> { return status; };
  }
  return file_source(*format, SourceOptions(options));
}

}  // namespace sluice
