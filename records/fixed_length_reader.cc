#include "sluice/records/fixed_length_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "sluice/records/indexed_record_reader.h"
#include "sluice/records/internal/byte_source.h"
#include "sluice/records/internal/read_buffer.h"

namespace sluice {
namespace {

Status CheckOptions(const std::string& name, const FixedLengthRecordOptions& o) {
  if (o.record_bytes == 0) {
    return Status::InvalidArgument(fmt::format("{}: record_bytes must be > 0", name));
  }
  if (o.compression == Compression::kAuto) {
    return Status::InvalidArgument(fmt::format(
        "{}: fixed-length records need their compression named (none, ZLIB or GZIP): raw bytes "
        "cannot be told from a compressed stream",
        name));
  }
  if (o.header_bytes > (uint64_t{1} << 62) || o.footer_bytes > (uint64_t{1} << 62) ||
      o.record_bytes > (uint64_t{1} << 40)) {
    return Status::InvalidArgument(
        fmt::format("{}: header, footer or record size too large", name));
  }
  return Status::OK();
}

std::string BodyError(uint64_t body, const FixedLengthRecordOptions& o) {
  return fmt::format(
      "excluding the header ({} bytes) and footer ({} bytes) the body has {} bytes, which is not a "
      "multiple of record_bytes ({}): {} bytes left over",
      o.header_bytes, o.footer_bytes, body, o.record_bytes, body % o.record_bytes);
}

// Records of an uncompressed file, at header_bytes + i * record_bytes.
class FixedLengthFile final : public IndexedRecordFile {
 public:
  FixedLengthFile(std::shared_ptr<ReadableFile> file, FixedLengthRecordOptions o, uint64_t n)
      : file_(std::move(file)), o_(o), n_(n) {}

  uint64_t num_records() const override { return n_; }
  const std::string& path() const override { return file_->name(); }
  RecordExtent extent(uint64_t i) const override {
    return {o_.header_bytes + i * o_.record_bytes, o_.record_bytes};
  }
  Result<std::vector<Record>> ReadRun(uint64_t first, size_t max_bytes,
                                      uint64_t stride) const override {
    stride = std::max<uint64_t>(stride, 1);
    if (first >= n_) {
      return Status::OutOfRange(
          fmt::format("{}: cannot read record {}: the file has {}", path(), first, n_));
    }
    const uint64_t fit = std::max<uint64_t>(1, max_bytes / o_.record_bytes);
    const uint64_t last = std::min(n_ - 1, first + fit - 1);
    const uint64_t bytes = (last - first + 1) * o_.record_bytes;
    const uint64_t at = extent(first).offset;
    Result<Buffer> buf = Buffer::Allocate(static_cast<size_t>(bytes));
    if (!buf.ok()) {
      return buf.status().WithContext(fmt::format("{}: record {} at offset {}", path(), first, at));
    }
    Result<size_t> got = file_->ReadAt(at, buf->data(), static_cast<size_t>(bytes));
    if (!got.ok()) return got.status().WithContext(fmt::format("reading record {}", first));
    if (*got < bytes) {
      return Status::DataLoss(fmt::format(
          "{}: record {} at offset {}: truncated: records {}..{} need {} bytes but the file ends "
          "{} bytes in (did it shrink after it was opened?)",
          path(), first, at, first, last, bytes, *got));
    }
    std::vector<Record> run;
    run.reserve(static_cast<size_t>((last - first) / stride + 1));
    for (uint64_t i = first;; i += stride) {
      const char* p = reinterpret_cast<const char*>(buf->data()) + (i - first) * o_.record_bytes;
      run.push_back(Record{std::string_view(p, o_.record_bytes), *buf, extent(i).offset, i});
      if (last - i < stride) break;
    }
    return run;
  }

 private:
  std::shared_ptr<ReadableFile> file_;
  FixedLengthRecordOptions o_;
  uint64_t n_;
};

// Records of a compressed stream, in order.
class CompressedReader final : public RecordReader {
 public:
  CompressedReader(std::shared_ptr<ReadableFile> file,
                   std::unique_ptr<records_internal::ByteSource> source, FixedLengthRecordOptions o)
      : file_(std::move(file)), source_(std::move(source)), o_(o) {
    // Buffers of one size that holds a record and the footer; none kept to
    // recycle, and allocation failures as Buffer::Allocate says them.
    const uint64_t size = std::max<uint64_t>(o_.buffer_size, o_.record_bytes + o_.footer_bytes);
    buf_ = records_internal::ReadBuffer(
        source_.get(), "", {.buffer_size = static_cast<size_t>(size), .max_spares = 0});
  }

  Result<std::optional<Record>> Next() override {
    if (!error_.ok()) return error_;
    while (skipped_ < o_.header_bytes) {
      SLUICE_RETURN_IF_ERROR(Fill(1));
      const uint64_t take = std::min<uint64_t>(buf_.available(), o_.header_bytes - skipped_);
      if (take == 0) return EndError();
      buf_.Consume(static_cast<size_t>(take));
      skipped_ += take;
    }
    const size_t need = static_cast<size_t>(o_.record_bytes + o_.footer_bytes);
    SLUICE_RETURN_IF_ERROR(Fill(need));
    if (buf_.available() < need) return EndError();
    Record r{std::string_view(reinterpret_cast<const char*>(buf_.data()), o_.record_bytes),
             buf_.buffer(), buf_.offset(), next_};
    buf_.Consume(static_cast<size_t>(o_.record_bytes));
    ++next_;
    return std::optional<Record>(std::move(r));
  }
  uint64_t next_record_number() const override { return next_; }
  size_t buffer_bytes() const override { return buf_.buffer_bytes(); }
  const std::string& filename() const override { return file_->name(); }

 private:
  // Makes at least `need` bytes available unless the stream ends first.
  // Stream errors stick; allocation failures do not.
  Status Fill(size_t need) {
    if (buf_.available() >= need || eof_) return Status::OK();
    SLUICE_RETURN_IF_ERROR(buf_.Reserve(need));  // then Ensure only reads
    Result<size_t> have = buf_.Ensure(need, true);
    if (!have.ok()) return Stick(have.status().WithContext(Where()));
    eof_ = *have < need;
    return Status::OK();
  }

  std::string Where() const {
    return fmt::format("{}: record {} at offset {}{}", file_->name(), next_, buf_.offset(),
                       source_->Where());
  }
  Status Stick(Status s) {
    error_ = std::move(s);
    return error_;
  }
  // The stream ended with fewer than record_bytes + footer_bytes left.
  Result<std::optional<Record>> EndError() {
    Status clean = source_->CheckCleanEnd();
    if (!clean.ok()) return Stick(clean.WithContext(Where()));
    const uint64_t left = buf_.available();
    if (skipped_ == o_.header_bytes && left == o_.footer_bytes) return std::optional<Record>();
    const uint64_t total = buf_.offset() + left;
    if (total < o_.header_bytes + o_.footer_bytes) {
      return Stick(Status::DataLoss(fmt::format(
          "{}: the stream has {} bytes, fewer than the header ({} bytes) and footer ({} bytes)",
          file_->name(), total, o_.header_bytes, o_.footer_bytes)));
    }
    return Stick(Status::DataLoss(
        fmt::format("{}: {}", Where(), BodyError(total - o_.header_bytes - o_.footer_bytes, o_))));
  }

  std::shared_ptr<ReadableFile> file_;
  std::unique_ptr<records_internal::ByteSource> source_;
  FixedLengthRecordOptions o_;
  records_internal::ReadBuffer buf_;
  bool eof_ = false;
  uint64_t skipped_ = 0;  // header bytes passed
  uint64_t next_ = 0;
  Status error_;
};

}  // namespace

Result<std::shared_ptr<const IndexedRecordFile>> OpenFixedLengthRecordFile(
    std::shared_ptr<ReadableFile> file, const FixedLengthRecordOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(file->name(), options));
  if (options.compression != Compression::kNone) {
    return Status::InvalidArgument(fmt::format(
        "{}: the file is {}-compressed; reading records at random needs an uncompressed file",
        file->name(), CompressionName(options.compression)));
  }
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  const uint64_t framing = options.header_bytes + options.footer_bytes;
  if (size < framing) {
    return Status::InvalidArgument(fmt::format(
        "{}: the file has {} bytes, fewer than the header ({} bytes) and footer ({} bytes)",
        file->name(), size, options.header_bytes, options.footer_bytes));
  }
  const uint64_t body = size - framing;
  if (body % options.record_bytes != 0) {
    return Status::InvalidArgument(fmt::format(
        "{}: offset {}: {}", file->name(),
        size - options.footer_bytes - body % options.record_bytes, BodyError(body, options)));
  }
  return std::shared_ptr<const IndexedRecordFile>(
      std::make_shared<FixedLengthFile>(std::move(file), options, body / options.record_bytes));
}

Result<std::shared_ptr<const IndexedRecordFile>> OpenFixedLengthRecordFile(
    const std::string& path, const FixedLengthRecordOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return OpenFixedLengthRecordFile(std::shared_ptr<ReadableFile>(std::move(file)), options);
}

Result<std::unique_ptr<RecordReader>> OpenFixedLengthRecordReader(
    std::shared_ptr<ReadableFile> file, const FixedLengthRecordOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(file->name(), options));
  if (options.compression == Compression::kNone) {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const IndexedRecordFile> indexed,
                            OpenFixedLengthRecordFile(std::move(file), options));
    return NewIndexedRecordReader(std::move(indexed), options.buffer_size);
  }
  file->AdviseSequential();
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<records_internal::ByteSource> source,
      records_internal::NewInflateSource(file.get(), options.compression, options.buffer_size));
  return std::unique_ptr<RecordReader>(
      std::make_unique<CompressedReader>(std::move(file), std::move(source), options));
}

Result<std::unique_ptr<RecordReader>> OpenFixedLengthRecordReader(
    const std::string& path, const FixedLengthRecordOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return OpenFixedLengthRecordReader(std::shared_ptr<ReadableFile>(std::move(file)), options);
}

}  // namespace sluice
