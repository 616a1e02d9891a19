#include "sluice/pipeline/parquet_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sluice/records/indexed_record_reader.h"
#include "sluice/records/parquet_file.h"

namespace sluice {
namespace {

ParquetReadOptions ReadOptions(const ParquetDatasetOptions& o) {
  ParquetReadOptions r;
  r.columns = o.columns;
  r.batch_rows = o.batch_rows;
  r.fill_nulls = o.fill_nulls;
  r.max_row_group_bytes = o.max_row_group_bytes;
  return r;
}

std::string Describe(const std::vector<ParquetComponent>& c) {
  std::vector<std::string> parts;
  for (const ParquetComponent& p : c) {
    parts.push_back(fmt::format("{}: {}{}", p.name, DTypeName(p.dtype), p.shape.ToString()));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

class ParquetFileFormat final : public FileFormat {
 public:
  ParquetFileFormat(ParquetDatasetOptions o, std::vector<ParquetComponent> components)
      : o_(std::move(o)), components_(std::move(components)) {
    std::vector<ComponentSpec> specs;
    for (const ParquetComponent& c : components_) specs.push_back({c.name, c.dtype, c.shape});
    spec_ = ElementSpec(std::move(specs));
  }

  std::string kind() const override { return "ParquetDataset"; }
  std::string Describe() const override {
    std::string d;
    if (!o_.columns.empty()) d = "columns=" + fmt::format("{}", fmt::join(o_.columns, ","));
    if (o_.batch_rows > 0)
      d += (d.empty() ? "" : ", ") + fmt::format("batch_rows={}", o_.batch_rows);
    if (o_.fill_nulls) d += (d.empty() ? "" : ", ") + std::string("fill_nulls");
    return d;
  }
  ElementSpec element_spec() const override { return spec_; }
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                             size_t buffer_size) const override {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const IndexedRecordFile> rows, OpenIndexed(path));
    return NewIndexedRecordReader(std::move(rows), buffer_size);
  }
  Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexed(
      const std::string& path) const override {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const ParquetFile> file,
                            ParquetFile::Open(path, ReadOptions(o_)));
    const std::vector<ParquetComponent>& c = file->components();
    bool same = c.size() == components_.size();
    for (size_t i = 0; same && i < c.size(); ++i) {
      same = c[i].name == components_[i].name && c[i].dtype == components_[i].dtype &&
             c[i].shape == components_[i].shape;
    }
    if (!same) {
      return Status::InvalidArgument(
          fmt::format("{}: its columns ({}) differ from the first file's ({})", path,
                      sluice::Describe(c), sluice::Describe(components_)));
    }
    return std::shared_ptr<const IndexedRecordFile>(std::move(file));
  }
  Result<Element> ToElement(const Record& rec, const std::string& /*path*/) const override {
    return ParquetRecordToElement(rec);
  }
  bool records_are_elements() const override { return false; }

 private:
  ParquetDatasetOptions o_;
  std::vector<ParquetComponent> components_;
  ElementSpec spec_;
};

}  // namespace

Result<std::shared_ptr<const FileFormat>> ParquetFormat(const std::string& reference_file,
                                                        const ParquetDatasetOptions& options) {
  if (options.batch_rows < 0) {
    return Status::InvalidArgument(
        fmt::format("ParquetDataset: batch_rows must be >= 0, got {}", options.batch_rows));
  }
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const ParquetFile> file,
                          ParquetFile::Open(reference_file, ReadOptions(options)));
  return std::shared_ptr<const FileFormat>(
      std::make_shared<ParquetFileFormat>(options, file->components()));
}

Dataset ParquetDataset(std::vector<std::string> filenames, ParquetDatasetOptions options) {
  if (filenames.empty()) {
    return Dataset::FromError(Status::InvalidArgument("ParquetDataset: no files given"));
  }
  Result<std::shared_ptr<const FileFormat>> format = ParquetFormat(filenames[0], options);
  if (!format.ok()) return Dataset::FromError(format.status().WithContext("ParquetDataset"));
  FileSourceOptions s;
  s.buffer_size = options.buffer_size;
  s.num_parallel_reads = options.num_parallel_reads;
  s.use_index = true;
  s.name = options.name;
  return FileSourceDataset(std::move(filenames), *std::move(format), s);
}

DatasetFn parquet_files(ParquetDatasetOptions options) {
  return [options](const Element& e) -> Result<Dataset> {
    if (e.size() != 1 || e[0].dtype() != DType::kString || e[0].num_elements() != 1) {
      return Status::InvalidArgument("ParquetDataset: expected a file name (string scalar), got " +
                                     e.DebugString());
    }
    Dataset d = ParquetDataset({std::string(e[0].flat<std::string_view>()[0])}, options);
    SLUICE_RETURN_IF_ERROR(d.status());
    return d;
  };
}

}  // namespace sluice
