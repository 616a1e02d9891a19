// Bindings of the text formats: TextLineDataset, CsvDataset and
// make_csv_dataset (python/sluice/text.py wraps them).
#include "sluice_py.h"

#include "sluice/pipeline/text_datasets.h"

namespace sluice::python {
namespace {

Compression CompressionOf(nb::handle c) {
  return c.is_none() ? Compression::kAuto : Unwrap(ParseCompression(nb::cast<std::string>(c)));
}

// (dtype name, value or None) pairs, made by text.py's _csv_default.
std::vector<CsvDefault> DefaultsOf(const nb::list& items) {
  std::vector<CsvDefault> out;
  for (nb::handle item : items) {
    auto [name, value] = nb::cast<std::tuple<std::string, nb::object>>(item);
    const DType dtype = Unwrap(DTypeFromName(name));
    if (value.is_none()) {
      out.push_back(CsvDefault::Required(dtype));
      continue;
    }
    switch (dtype) {
      case DType::kInt32: out.push_back(CsvDefault::Value(nb::cast<int32_t>(value))); break;
      case DType::kInt64: out.push_back(CsvDefault::Value(nb::cast<int64_t>(value))); break;
      case DType::kFloat32: out.push_back(CsvDefault::Value(nb::cast<float>(value))); break;
      case DType::kFloat64: out.push_back(CsvDefault::Value(nb::cast<double>(value))); break;
      default: out.push_back(CsvDefault::Value(nb::cast<std::string>(value)));
    }
  }
  return out;
}

}  // namespace

void RegisterText(nb::module_& m) {
  m.def(
      "_text_line_dataset",
      [](std::vector<std::string> files, nb::object compression, int64_t buffer_size,
         int64_t num_parallel_reads, int64_t max_line_size, std::string name) {
        TextLineDatasetOptions o{.compression = CompressionOf(compression),
                                 .num_parallel_reads = num_parallel_reads,
                                 .max_line_size = max_line_size,
                                 .name = std::move(name)};
        if (buffer_size > 0) o.buffer_size = buffer_size;
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return TextLineDataset(std::move(files), o);
        }();
        return Checked(std::move(ds));
      },
      nb::arg("files"), nb::arg("compression").none(), nb::arg("buffer_size"),
      nb::arg("num_parallel_reads"), nb::arg("max_line_size"), nb::arg("name"));
  m.def(
      "_csv_dataset",
      [](std::vector<std::string> files, nb::list defaults, nb::object compression,
         int64_t buffer_size, bool header, std::string field_delim, bool use_quote_delim,
         std::string na_value, std::vector<int64_t> select_cols, std::vector<int64_t> exclude_cols,
         int64_t num_parallel_reads, int64_t max_record_size, std::string name) {
        if (field_delim.size() != 1) {
          ThrowStatus(Status::InvalidArgument("CsvDataset: field_delim must be one character"));
        }
        CsvDatasetOptions o{.compression = CompressionOf(compression),
                            .header = header,
                            .field_delim = field_delim[0],
                            .use_quote_delim = use_quote_delim,
                            .na_value = std::move(na_value),
                            .select_cols = std::move(select_cols),
                            .exclude_cols = std::move(exclude_cols),
                            .num_parallel_reads = num_parallel_reads,
                            .max_record_size = max_record_size,
                            .name = std::move(name)};
        if (buffer_size > 0) o.buffer_size = buffer_size;
        std::vector<CsvDefault> d = DefaultsOf(defaults);
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return CsvDataset(std::move(files), std::move(d), std::move(o));
        }();
        return Checked(std::move(ds));
      },
      nb::arg("files"), nb::arg("defaults"), nb::arg("compression").none(), nb::arg("buffer_size"),
      nb::arg("header"), nb::arg("field_delim"), nb::arg("use_quote_delim"), nb::arg("na_value"),
      nb::arg("select_cols"), nb::arg("exclude_cols"), nb::arg("num_parallel_reads"),
      nb::arg("max_record_size"), nb::arg("name"));
  m.def(
      "_make_csv_dataset",
      [](std::string pattern, int64_t batch_size, std::vector<std::string> column_names,
         nb::list column_defaults, std::string label_name, std::vector<std::string> select,
         std::string field_delim, bool use_quote_delim, std::string na_value, bool header,
         int64_t num_epochs, bool shuffle, int64_t shuffle_buffer_size, nb::object seed,
         int64_t num_parallel_reads, int64_t num_rows_for_inference, nb::object compression,
         bool ignore_errors) {
        if (field_delim.size() != 1) {
          ThrowStatus(
              Status::InvalidArgument("make_csv_dataset: field_delim must be one character"));
        }
        MakeCsvDatasetOptions o{.column_names = std::move(column_names),
                                .column_defaults = DefaultsOf(column_defaults),
                                .label_name = std::move(label_name),
                                .select_columns = std::move(select),
                                .field_delim = field_delim[0],
                                .use_quote_delim = use_quote_delim,
                                .na_value = std::move(na_value),
                                .header = header,
                                .num_epochs = num_epochs,
                                .shuffle = shuffle,
                                .shuffle_buffer_size = shuffle_buffer_size,
                                .num_parallel_reads = num_parallel_reads,
                                .num_rows_for_inference = num_rows_for_inference,
                                .compression = CompressionOf(compression),
                                .ignore_errors = ignore_errors};
        if (!seed.is_none()) o.shuffle_seed = nb::cast<uint64_t>(seed);
        Result<Dataset> ds = [&] {
          nb::gil_scoped_release release;
          return MakeCsvDataset(pattern, batch_size, std::move(o));
        }();
        return Unwrap(std::move(ds));  // with the GIL: it may raise
      },
      nb::arg("pattern"), nb::arg("batch_size"), nb::arg("column_names"),
      nb::arg("column_defaults"), nb::arg("label_name"), nb::arg("select"), nb::arg("field_delim"),
      nb::arg("use_quote_delim"), nb::arg("na_value"), nb::arg("header"), nb::arg("num_epochs"),
      nb::arg("shuffle"), nb::arg("shuffle_buffer_size"), nb::arg("seed").none(),
      nb::arg("num_parallel_reads"), nb::arg("num_rows_for_inference"),
      nb::arg("compression").none(), nb::arg("ignore_errors"));
}

}  // namespace sluice::python
