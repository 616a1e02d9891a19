#include "sluice/pipeline/fixed_length_record_dataset.h"

#include <fmt/format.h>

#include "sluice/records/fixed_length_reader.h"

namespace sluice {
namespace {

class FixedLengthFormat final : public FileFormat {
 public:
  explicit FixedLengthFormat(FixedLengthRecordOptions o) : o_(o) {}

  std::string kind() const override { return "FixedLengthRecordDataset"; }
  std::string Describe() const override {
    std::string d = fmt::format("record_bytes={}", o_.record_bytes);
    if (o_.header_bytes) d += fmt::format(", header_bytes={}", o_.header_bytes);
    if (o_.footer_bytes) d += fmt::format(", footer_bytes={}", o_.footer_bytes);
    if (o_.compression != Compression::kNone) {
      d += fmt::format(", compression={}", CompressionName(o_.compression));
    }
    return d;
  }
  // Elements: the default, a string scalar view of each record.
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                             size_t buffer_size) const override {
    FixedLengthRecordOptions o = o_;
    o.buffer_size = buffer_size;
    return OpenFixedLengthRecordReader(path, o);
  }
  Result<std::shared_ptr<const IndexedRecordFile>> OpenIndexed(
      const std::string& path) const override {
    if (o_.compression != Compression::kNone) return std::shared_ptr<const IndexedRecordFile>();
    return OpenFixedLengthRecordFile(path, o_);
  }

 private:
  FixedLengthRecordOptions o_;
};

FileSourceOptions SourceOptions(const FixedLengthRecordDatasetOptions& o) {
  FileSourceOptions s;
  s.buffer_size = o.buffer_size;
  s.num_parallel_reads = o.num_parallel_reads;
  s.use_index = true;
  s.name = o.name;
  return s;
}

}  // namespace

Result<std::shared_ptr<const FileFormat>> FixedLengthRecordFormat(
    int64_t record_bytes, const FixedLengthRecordDatasetOptions& options) {
  if (record_bytes < 1) {
    return Status::InvalidArgument(fmt::format(
        "FixedLengthRecordDataset: record_bytes must be at least 1, got {}", record_bytes));
  }
  if (options.header_bytes < 0 || options.footer_bytes < 0) {
    return Status::InvalidArgument(fmt::format(
        "FixedLengthRecordDataset: header_bytes ({}) and footer_bytes ({}) must be >= 0",
        options.header_bytes, options.footer_bytes));
  }
  if (options.compression == Compression::kAuto) {
    return Status::InvalidArgument(
        "FixedLengthRecordDataset: compression must be none, ZLIB or GZIP (raw records cannot "
        "be told from a compressed stream)");
  }
  FixedLengthRecordOptions o;
  o.record_bytes = static_cast<uint64_t>(record_bytes);
  o.header_bytes = static_cast<uint64_t>(options.header_bytes);
  o.footer_bytes = static_cast<uint64_t>(options.footer_bytes);
  o.compression = options.compression;
  o.buffer_size = static_cast<size_t>(std::max<int64_t>(options.buffer_size, 1));
  return std::shared_ptr<const FileFormat>(std::make_shared<FixedLengthFormat>(o));
}

Dataset FixedLengthRecordDataset(std::vector<std::string> filenames, int64_t record_bytes,
                                 FixedLengthRecordDatasetOptions options) {
  Result<std::shared_ptr<const FileFormat>> format = FixedLengthRecordFormat(record_bytes, options);
  if (!format.ok()) return Dataset::FromError(format.status());
  return FileSourceDataset(std::move(filenames), *std::move(format), SourceOptions(options));
}

DatasetFn fixed_length_records(int64_t record_bytes, FixedLengthRecordDatasetOptions options) {
  Result<std::shared_ptr<const FileFormat>> format = FixedLengthRecordFormat(record_bytes, options);
  if (!format.ok()) {
    return [status = format.status()](const Element&) -> Result<Dataset> { return status; };
  }
  return file_source(*std::move(format), SourceOptions(options));
}

}  // namespace sluice
