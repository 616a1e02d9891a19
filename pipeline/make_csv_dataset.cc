// MakeCsvDataset: tf.data.experimental.make_csv_dataset's pipeline over
// CsvDataset: column names from the header, types inferred from a sample
// of rows, then list_files -> interleave -> shuffle -> repeat -> batch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "sluice/pipeline/map_context.h"
#include "sluice/pipeline/text_datasets.h"
#include "sluice/records/csv.h"
#include "sluice/records/csv_reader.h"

namespace sluice {
namespace {

// The file names the pattern matches, in list_files' sorted order.
Result<std::vector<std::string>> ListedFiles(const std::string& pattern) {
  std::vector<std::string> files;
  Result<Iterator> it = Dataset::list_files(pattern).iterator();
  if (!it.ok()) return it.status();
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->next());
    if (!e) break;
    files.emplace_back((*e)[0].flat<std::string_view>()[0]);
  }
  return files;
}

// Calls fn(fields, line) for the records of `path` until it returns false.
template <typename Fn>
Status ForEachRow(const std::string& path, const CsvReaderOptions& opts, Fn fn) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, OpenCsvReader(path, opts));
  std::vector<CsvField> fields;
  std::string scratch;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Record> rec, reader->Next());
    if (!rec) return Status::OK();
    CsvSyntaxError err;
    if (!SplitCsvRecord(rec->data, opts.dialect, &fields, &scratch, &err)) {
      return Status::InvalidArgument(fmt::format(
          "{}:{}: column {}: {}", path, rec->line + err.line_offset, err.column, err.message));
    }
    if (!fn(fields, rec->line)) return Status::OK();
  }
}

Result<std::vector<std::string>> HeaderOf(const std::string& path, CsvReaderOptions opts) {
  opts.header = false;
  std::vector<std::string> names;
  bool found = false;
  SLUICE_RETURN_IF_ERROR(ForEachRow(path, opts, [&](const std::vector<CsvField>& f, uint64_t) {
    for (const CsvField& x : f) names.emplace_back(x.text);
    found = true;
    return false;
  }));
  if (!found) return Status::InvalidArgument(path + ": no header: the file is empty");
  return names;
}

// make_csv_dataset's order: int32, int64, float32, float64, string; a type
// is kept only while every value so far fits it.
DType InferType(std::string_view text, DType prev, bool have_prev) {
  const auto fits = [&](int i) {
    switch (i) {
      case 0: {
        int32_t v;
        return ParseCsvNumber(text, &v);
      }
      case 1: {
        int64_t v;
        return ParseCsvNumber(text, &v);
      }
      case 2: {
        float v;
        return ParseCsvNumber(text, &v) && v < std::numeric_limits<float>::infinity();
      }
      case 3: {
        double v;
        return ParseCsvNumber(text, &v) && v < std::numeric_limits<double>::infinity();
      }
      default: return true;
    }
  };
  constexpr DType kOrder[] = {DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64,
                              DType::kString};
  const int prev_rank =
      have_prev ? static_cast<int>(std::find(kOrder, kOrder + 5, prev) - kOrder) : 0;
  for (int i = prev_rank; i < 5; ++i) {
    if (fits(i)) return kOrder[i];
  }
  return DType::kString;
}

CsvDefault ZeroOf(DType d) {
  switch (d) {
    case DType::kInt32: return CsvDefault::Value(int32_t{0});
    case DType::kInt64: return CsvDefault::Value(int64_t{0});
    case DType::kFloat32: return CsvDefault::Value(0.0f);
    case DType::kFloat64: return CsvDefault::Value(0.0);
    default: return CsvDefault::Value("");
  }
}

}  // namespace

Result<Dataset> MakeCsvDataset(const std::string& file_pattern, int64_t batch_size,
                               MakeCsvDatasetOptions o) {
  const auto bad = [](std::string msg) {
    return Status::InvalidArgument("make_csv_dataset: " + msg);
  };
  if (batch_size <= 0) return bad("batch_size must be positive");
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> files, ListedFiles(file_pattern));
  CsvReaderOptions ropts{
      .compression = o.compression,
      .dialect = {.field_delim = o.field_delim, .use_quote_delim = o.use_quote_delim},
      .header = o.header};
  SLUICE_RETURN_IF_ERROR(CheckCsvDialect(ropts.dialect));

  std::vector<std::string> names = o.column_names;
  if (names.empty()) {
    if (!o.header) return bad("give column_names, or header=true to read them");
    SLUICE_ASSIGN_OR_RETURN(names, HeaderOf(files[0], ropts));
    for (size_t i = 1; i < files.size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> other, HeaderOf(files[i], ropts));
      if (other != names) {
        return bad(fmt::format("{} has other column names than {}", files[i], files[0]));
      }
    }
  }
  if (std::set<std::string>(names.begin(), names.end()).size() != names.size()) {
    return bad("the column names have duplicates");
  }
  // The selected columns, in file order.
  std::vector<int64_t> select;
  for (const std::string& s : o.select_columns) {
    auto it = std::find(names.begin(), names.end(), s);
    if (it == names.end()) return bad(fmt::format("select_columns: no column named '{}'", s));
    select.push_back(it - names.begin());
  }
  std::sort(select.begin(), select.end());
  select.erase(std::unique(select.begin(), select.end()), select.end());
  std::vector<int64_t> cols = select;
  if (cols.empty()) {
    for (size_t i = 0; i < names.size(); ++i) cols.push_back(static_cast<int64_t>(i));
  }

  std::vector<CsvDefault> defaults = o.column_defaults;
  if (defaults.empty()) {
    std::vector<DType> types(cols.size(), DType::kString);
    std::vector<bool> seen(cols.size(), false);
    int64_t rows = 0;
    Status row_error;
    for (const std::string& f : files) {
      if (rows >= o.num_rows_for_inference) break;
      SLUICE_RETURN_IF_ERROR(
          ForEachRow(f, ropts, [&](const std::vector<CsvField>& fields, uint64_t line) {
            if (fields.size() != names.size()) {
              row_error =
                  bad(fmt::format("{}:{}: the row has {} fields, {} expected (inferring "
                                  "column types)",
                                  f, line, fields.size(), names.size()));
              return false;
            }
            for (size_t j = 0; j < cols.size(); ++j) {
              std::string_view text = fields[static_cast<size_t>(cols[j])].text;
              if (text.empty() || text == o.na_value) continue;
              types[j] = InferType(text, types[j], seen[j]);
              seen[j] = true;
            }
            return ++rows < o.num_rows_for_inference;
          }));
      SLUICE_RETURN_IF_ERROR(row_error);
    }
    for (DType t : types) defaults.push_back(ZeroOf(t));
  }
  if (defaults.size() != cols.size()) {
    return bad(
        fmt::format("column_defaults has {} entries for {} columns", defaults.size(), cols.size()));
  }
  std::vector<std::string> out_names;
  for (int64_t c : cols) out_names.push_back(names[static_cast<size_t>(c)]);
  size_t label = out_names.size();
  if (!o.label_name.empty()) {
    label = static_cast<size_t>(std::find(out_names.begin(), out_names.end(), o.label_name) -
                                out_names.begin());
    if (label == out_names.size()) {
      return bad(fmt::format("label_name '{}' is not one of the columns", o.label_name));
    }
  }

  CsvDatasetOptions copts{
      .compression = o.compression,
      .header = o.header,
      .field_delim = o.field_delim,
      .use_quote_delim = o.use_quote_delim,
      .na_value = o.na_value,
      .select_cols = select.size() < names.size() ? select : std::vector<int64_t>{}};
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const FileFormat> format,
                          CsvFileFormat(defaults, copts, out_names));
  const bool autotune = o.num_parallel_reads == kAutotune;
  Dataset ds = Dataset::list_files(file_pattern, {.shuffle = o.shuffle, .seed = o.shuffle_seed})
                   .interleave(file_source(format, {.use_index = false}),
                               {.cycle_length = autotune ? kAutotune : o.num_parallel_reads,
                                .block_length = 1,
                                .parallelism = autotune ? kAutotune : 1});
  if (o.ignore_errors) ds = ds.ignore_errors();
  if (o.shuffle) ds = ds.shuffle(o.shuffle_buffer_size, {.seed = o.shuffle_seed});
  if (o.num_epochs != 1) ds = ds.repeat(o.num_epochs);
  ds = ds.batch(batch_size, {.drop_remainder = o.num_epochs == -1});
  if (label != out_names.size() && label + 1 != out_names.size()) {
    // The label goes last.
    ds = ds.map(
        [label](Element e, const MapContext&) -> Result<Element> {
          std::vector<Tensor> t;
          std::vector<std::string> n;
          for (size_t i = 0; i < e.size(); ++i) {
            if (i == label) continue;
            t.push_back(e[i]);
            n.push_back(e.names()[i]);
          }
          t.push_back(e[label]);
          n.push_back(e.names()[label]);
          return Element(std::move(t), std::move(n));
        },
        {.name = "make_csv_dataset_label_last"});
  }
  return ds.prefetch(kAutotune);
}

}  // namespace sluice
