#include "sluice/records/csv_reader.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "sluice/records/internal/text_stream.h"

namespace sluice {
namespace {

using records_internal::TextStream;
using records_internal::TextUnit;
using records_internal::UnitScanner;

// A record ends at a line break outside quotes. Quotes open only at a
// field's start; inside, "" stays inside. A line without quotes or "\r" is
// passed with memchr alone.
class CsvScanner final : public UnitScanner {
 public:
  explicit CsvScanner(CsvDialect d) : delim_(d.field_delim), quoting_(d.use_quote_delim) {}

  void Reset() override {
    scanned_ = 0;
    state_ = kFieldStart;
    pending_cr_ = false;
    breaks_ = delims_ = quote_breaks_ = 0;
    quote_column_ = 0;
  }

  size_t Scan(const char* u, size_t n) override {
    size_t i = scanned_;
    if (pending_cr_) {  // a "\r" ended the last bytes: "\r\n" or a lone "\r"?
      if (i >= n) return kNotYet;
      pending_cr_ = false;
      ++breaks_;
      return u[i] == '\n' ? i + 1 : i;
    }
    while (i < n) {
      if (state_ == kQuoted) {
        const char* q = static_cast<const char*>(std::memchr(u + i, '"', n - i));
        const char* stop = q ? q : u + n;
        breaks_ += static_cast<uint64_t>(std::count(u + i, stop, '\n'));
        i = static_cast<size_t>(stop - u);
        if (q == nullptr) break;
        ++i;
        state_ = kQuoteSeen;
        continue;
      }
      if (state_ == kQuoteSeen) {  // closing, or the first of ""
        if (u[i] == '"') {
          state_ = kQuoted;
          ++i;
          continue;
        }
        state_ = kUnquoted;
      }
      const char* nl = static_cast<const char*>(std::memchr(u + i, '\n', n - i));
      const size_t seg = static_cast<size_t>((nl ? nl : u + n) - u);
      if ((!quoting_ || std::memchr(u + i, '"', seg - i) == nullptr) &&
          std::memchr(u + i, '\r', seg - i) == nullptr) {
        if (nl) {
          ++breaks_;
          return seg + 1;
        }
        delims_ += static_cast<uint64_t>(std::count(u + i, u + n, delim_));
        state_ = u[n - 1] == delim_ ? kFieldStart : kUnquoted;
        i = n;
        break;
      }
      for (; i < n; ++i) {
        const char c = u[i];
        if (c == '\n') {
          ++breaks_;
          return i + 1;
        }
        if (c == '\r') {
          if (i + 1 == n) {
            pending_cr_ = true;
            scanned_ = n;
            return kNotYet;
          }
          ++breaks_;
          return u[i + 1] == '\n' ? i + 2 : i + 1;
        }
        if (c == delim_) {
          ++delims_;
          state_ = kFieldStart;
        } else if (c == '"' && quoting_ && state_ == kFieldStart) {
          state_ = kQuoted;
          quote_breaks_ = breaks_;
          quote_column_ = delims_ + 1;
          ++i;
          break;
        } else {
          state_ = kUnquoted;
        }
      }
    }
    scanned_ = n;
    return kNotYet;
  }

  std::string AtEnd(uint64_t first_line) const override {
    if (state_ != kQuoted) return {};
    return fmt::format("{}: column {}: the quoted field has no closing quote before the end of "
                       "the file",
                       first_line + quote_breaks_, quote_column_);
  }
  void Drop(size_t n) override { scanned_ -= n; }
  uint64_t line_breaks() const override { return breaks_; }

 private:
  enum State { kFieldStart, kUnquoted, kQuoted, kQuoteSeen };
  const char delim_;
  const bool quoting_;
  size_t scanned_ = 0;
  State state_ = kFieldStart;
  bool pending_cr_ = false;
  uint64_t breaks_ = 0;
  uint64_t delims_ = 0;
  uint64_t quote_breaks_ = 0;
  uint64_t quote_column_ = 0;
};

class CsvReader final : public RecordReader {
 public:
  CsvReader(std::unique_ptr<TextStream> stream, const CsvReaderOptions& options)
      : stream_(std::move(stream)), scanner_(options.dialect), header_(options.header) {}

  Result<std::optional<Record>> Next() override {
    if (header_) {  // the column names: read and dropped
      Result<std::optional<TextUnit>> head = stream_->Next(scanner_, "header record");
      if (head.ok() || stream_->moved_past()) header_ = false;
      if (!head.ok()) return head.status();
      if (!head->has_value()) return std::optional<Record>();
    }
    Result<std::optional<TextUnit>> unit = stream_->Next(scanner_, "record");
    if (!unit.ok()) {
      if (stream_->moved_past()) ++number_;
      return unit.status();
    }
    if (!unit->has_value()) return std::optional<Record>();
    TextUnit& u = **unit;
    size_t size = u.size;
    // The line break, outside quotes by construction: "\n", "\r\n" or "\r".
    if (size > 0 && u.data[size - 1] == '\n') --size;
    if (size > 0 && u.data[size - 1] == '\r') --size;
    Record rec{std::string_view(u.data, size), std::move(u.owner), u.offset, number_++, u.line};
    return std::optional<Record>(std::move(rec));
  }
  uint64_t next_record_number() const override { return number_; }
  size_t buffer_bytes() const override { return stream_->buffer_bytes(); }
  const std::string& filename() const override { return stream_->name(); }

 private:
  std::unique_ptr<TextStream> stream_;
  CsvScanner scanner_;
  bool header_;
  uint64_t number_ = 0;
};

}  // namespace

Result<std::unique_ptr<RecordReader>> OpenCsvReader(const std::string& path,
                                                    const CsvReaderOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckCsvDialect(options.dialect));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return OpenCsvReader(std::move(file), options);
}

Result<std::unique_ptr<RecordReader>> OpenCsvReader(std::unique_ptr<ReadableFile> file,
                                                    const CsvReaderOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckCsvDialect(options.dialect));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TextStream> stream,
                          TextStream::Open(std::move(file), options.compression,
                                           options.buffer_size, options.max_record_size));
  return std::unique_ptr<RecordReader>(new CsvReader(std::move(stream), options));
}

}  // namespace sluice
