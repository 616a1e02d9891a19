// TextLineDataset: the lines of text files (records/text_line_reader.h) as
// string scalars, on the one file source.
#include <fmt/format.h>

#include "sluice/pipeline/text_datasets.h"
#include "sluice/records/text_line_reader.h"

namespace sluice {
namespace {

class TextLineFormat final : public FileFormat {
 public:
  explicit TextLineFormat(const TextLineDatasetOptions& o)
      : reader_{.compression = o.compression,
                .buffer_size = static_cast<size_t>(std::max<int64_t>(o.buffer_size, 1)),
                .max_line_size = static_cast<uint64_t>(std::max<int64_t>(o.max_line_size, 1))} {}

  std::string kind() const override { return "TextLineDataset"; }
  std::string Describe() const override {
    return fmt::format("compression={}", CompressionName(reader_.compression));
  }
  Result<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                             size_t buffer_size) const override {
    TextLineReaderOptions o = reader_;
    o.buffer_size = buffer_size;
    return OpenTextLineReader(path, o);
  }

 private:
  TextLineReaderOptions reader_;
};

FileSourceOptions SourceOptions(const TextLineDatasetOptions& o) {
  return {.buffer_size = o.buffer_size, .num_parallel_reads = o.num_parallel_reads,
          .use_index = false, .name = o.name};
}

}  // namespace

std::shared_ptr<const FileFormat> TextLineFileFormat(const TextLineDatasetOptions& options) {
  return std::make_shared<TextLineFormat>(options);
}

Dataset TextLineDataset(std::vector<std::string> files, TextLineDatasetOptions options) {
  if (options.buffer_size <= 0 || options.max_line_size <= 0) {
    return Dataset::FromError(Status::InvalidArgument(
        "TextLineDataset: buffer_size and max_line_size must be positive"));
  }
  return FileSourceDataset(std::move(files), TextLineFileFormat(options), SourceOptions(options));
}

DatasetFn textlines(TextLineDatasetOptions options) {
  return file_source(TextLineFileFormat(options), SourceOptions(options));
}

}  // namespace sluice
