#include "sluice/records/text_line_reader.h"

#include <algorithm>
#include <cstring>

#include "sluice/records/internal/text_stream.h"

namespace sluice {
namespace {

using records_internal::TextStream;
using records_internal::TextUnit;
using records_internal::UnitScanner;

// A line ends after its "\n".
class LineScanner final : public UnitScanner {
 public:
  void Reset() override { scanned_ = 0; }
  size_t Scan(const char* unit, size_t n) override {
    const void* nl = std::memchr(unit + scanned_, '\n', n - scanned_);
    if (nl == nullptr) {
      scanned_ = n;
      return kNotYet;
    }
    return static_cast<size_t>(static_cast<const char*>(nl) - unit) + 1;
  }
  std::string AtEnd(uint64_t) const override { return {}; }
  void Drop(size_t n) override { scanned_ -= n; }
  uint64_t line_breaks() const override { return 1; }

 private:
  size_t scanned_ = 0;
};

class TextLineReader final : public RecordReader {
 public:
  explicit TextLineReader(std::unique_ptr<TextStream> stream) : stream_(std::move(stream)) {}

  Result<std::optional<Record>> Next() override {
    Result<std::optional<TextUnit>> unit = stream_->Next(scanner_, "line");
    if (!unit.ok()) {
      if (stream_->moved_past()) ++number_;
      return unit.status();
    }
    if (!unit->has_value()) return std::optional<Record>();
    TextUnit& u = **unit;
    size_t size = u.size;
    const bool terminated = size > 0 && u.data[size - 1] == '\n';
    if (terminated) --size;
    // Every '\r' goes, in place (the bytes are not handed out yet).
    if (std::memchr(u.data, '\r', size) != nullptr) {
      size = static_cast<size_t>(std::remove(u.data, u.data + size, '\r') - u.data);
    }
    if (!terminated && size == 0) return std::optional<Record>();  // a trailing "\r"
    Record rec{std::string_view(u.data, size), std::move(u.owner), u.offset, number_++, u.line};
    return std::optional<Record>(std::move(rec));
  }
  uint64_t next_record_number() const override { return number_; }
  size_t buffer_bytes() const override { return stream_->buffer_bytes(); }
  const std::string& filename() const override { return stream_->name(); }

 private:
  std::unique_ptr<TextStream> stream_;
  LineScanner scanner_;
  uint64_t number_ = 0;
};

}  // namespace

Result<std::unique_ptr<RecordReader>> OpenTextLineReader(const std::string& path,
                                                         const TextLineReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return OpenTextLineReader(std::move(file), options);
}

Result<std::unique_ptr<RecordReader>> OpenTextLineReader(std::unique_ptr<ReadableFile> file,
                                                         const TextLineReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TextStream> stream,
                          TextStream::Open(std::move(file), options.compression,
                                           options.buffer_size, options.max_line_size));
  return std::unique_ptr<RecordReader>(new TextLineReader(std::move(stream)));
}

}  // namespace sluice
