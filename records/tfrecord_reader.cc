#include "sluice/records/tfrecord_reader.h"

#include <algorithm>

#include <fmt/format.h>

#include "sluice/records/internal/byte_source.h"
#include "sluice/records/internal/read_buffer.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_format.h"

namespace sluice {

using records_internal::ByteSource;

struct TFRecordReader::Impl {
  std::unique_ptr<ReadableFile> file;
  std::unique_ptr<ByteSource> source;
  TFRecordReaderOptions opts;
  Compression compression = Compression::kNone;

  // Stream bytes read and not yet consumed.
  records_internal::ReadBuffer buf;
  uint64_t number = 0;           // number of the next record
  uint64_t known_file_size = 0;  // for uncompressed length checks
  // After Seek(): the payload length the index promises for the next record.
  std::optional<uint64_t> expected_length;

  // Set when NextFrame() stopped inside a record: every later call fails so.
  Status failed;

  Result<std::optional<Record>> Next();
  Result<std::optional<RecordFrame>> NextFrame();
  Result<std::optional<uint64_t>> ReadHeader(uint64_t offset);
  Status DataChecksumError(uint64_t offset, uint32_t stored, uint32_t computed, uint64_t length);
  Result<std::optional<Record>> Truncated(uint64_t offset, uint64_t have, uint64_t need);
  Status TruncatedError(uint64_t offset, uint64_t have, uint64_t need);
  std::string Where(uint64_t offset) const {
    return fmt::format("{}: record {} at offset {}{}", file->name(), number, offset,
                       source->Where());
  }
};

Status TFRecordReader::Impl::TruncatedError(uint64_t offset, uint64_t have, uint64_t need) {
  std::string msg = fmt::format(
      "{}: truncated: the record needs {} bytes but the file ends {} "
      "bytes in",
      Where(offset), need, have);
  Status stream = source->CheckCleanEnd();
  if (!stream.ok()) msg += fmt::format(" ({})", stream.message());
  return Status::DataLoss(msg);
}

Result<std::optional<Record>> TFRecordReader::Impl::Truncated(uint64_t offset, uint64_t have,
                                                              uint64_t need) {
  if (opts.allow_truncated_tail) return std::optional<Record>();  // retry later
  return TruncatedError(offset, have, need);
}

// Reads and checks the header of the record at the current position: its
// payload length, or nullopt at a clean end of the data (or, with
// allow_truncated_tail, a header cut short).
Result<std::optional<uint64_t>> TFRecordReader::Impl::ReadHeader(uint64_t offset) {
  SLUICE_ASSIGN_OR_RETURN(size_t have, buf.Ensure(tfrecord::kHeaderSize, true));
  if (have == 0) {
    Status clean = source->CheckCleanEnd();
    if (!clean.ok() && !opts.allow_truncated_tail) return clean;
    if (expected_length) {
      return Status::DataLoss(
          fmt::format("{}: the index lists a record here but the file ends", Where(offset)));
    }
    return std::optional<uint64_t>();
  }
  if (have < tfrecord::kHeaderSize) {
    if (opts.allow_truncated_tail) return std::optional<uint64_t>();  // retry later
    return TruncatedError(offset, have, tfrecord::kHeaderSize);
  }
  const uint8_t* header = buf.data();
  if (!tfrecord::HeaderChecksumOk(header)) {
    return Status::DataLoss(fmt::format(
        "{}: corrupt record header: the length checksum does not match (stored 0x{:08x}, "
        "computed 0x{:08x}); the file is damaged or is not a TFRecord file",
        Where(offset), tfrecord::DecodeFixed32(header + tfrecord::kLengthSize),
        crc32c::Mask(crc32c::Value(header, tfrecord::kLengthSize))));
  }
  const uint64_t length = tfrecord::DecodeFixed64(header);
  if (expected_length && *expected_length != length) {
    return Status::DataLoss(
        fmt::format("{}: the index says {} bytes but the record holds {}; "
                    "rebuild the index",
                    Where(offset), *expected_length, length));
  }
  if (length > opts.max_record_size) {
    return Status::DataLoss(fmt::format("{}: record length {} exceeds max_record_size {}",
                                        Where(offset), length, opts.max_record_size));
  }
  if (compression == Compression::kNone && !file->is_stream()) {
    // Never allocate more than the file holds: a corrupt length whose CRC
    // happens to match must not become a huge allocation.
    const uint64_t total = tfrecord::kFramingSize + length;
    if (offset + total > known_file_size) {
      SLUICE_ASSIGN_OR_RETURN(known_file_size, file->Size());
    }
    if (offset + total > known_file_size) {
      if (opts.allow_truncated_tail) return std::optional<uint64_t>();  // retry later
      return TruncatedError(offset, known_file_size - std::min(offset, known_file_size), total);
    }
  }
  return std::optional<uint64_t>(length);
}

Status TFRecordReader::Impl::DataChecksumError(uint64_t offset, uint32_t stored, uint32_t computed,
                                               uint64_t length) {
  return Status::DataLoss(fmt::format(
      "{}: corrupt record data: the data checksum does not match (stored 0x{:08x}, computed "
      "0x{:08x}); {} bytes",
      Where(offset), stored, computed, length));
}

Result<std::optional<Record>> TFRecordReader::Impl::Next() {
  const uint64_t offset = buf.offset();
  SLUICE_ASSIGN_OR_RETURN(std::optional<uint64_t> header_length, ReadHeader(offset));
  if (!header_length) return std::optional<Record>();
  const uint64_t length = *header_length;
  const uint64_t total = tfrecord::kFramingSize + length;
  // ReadHeader checked an uncompressed file's length against its size.
  const bool trusted = compression == Compression::kNone && !file->is_stream();
  SLUICE_ASSIGN_OR_RETURN(size_t have, buf.Ensure(total, trusted));
  if (have < total) return Truncated(offset, have, total);

  const uint8_t* data = buf.data() + tfrecord::kHeaderSize;
  if (opts.verify_checksums) {
    const uint32_t stored = tfrecord::DecodeFixed32(data + length);
    const uint32_t computed = crc32c::Mask(crc32c::Value(data, length));
    if (stored != computed) {
      Status err = DataChecksumError(offset, stored, computed, length);
      buf.Consume(total);  // framing is intact: the caller may skip this record
      ++number;
      expected_length.reset();
      return err;
    }
  }
  Record record{std::string_view(reinterpret_cast<const char*>(data), length), buf.buffer(), offset,
                number};
  buf.Consume(total);
  ++number;
  expected_length.reset();
  buf.ReleaseIfOversized();  // a buffer made for this record alone: the record keeps it
  return std::optional<Record>(std::move(record));
}

Result<std::optional<RecordFrame>> TFRecordReader::Impl::NextFrame() {
  if (!failed.ok()) return failed;
  const uint64_t offset = buf.offset();
  SLUICE_ASSIGN_OR_RETURN(std::optional<uint64_t> header_length, ReadHeader(offset));
  if (!header_length) return std::optional<RecordFrame>();
  const uint64_t length = *header_length;
  const uint64_t total = tfrecord::kFramingSize + length;
  buf.Consume(tfrecord::kHeaderSize);
  // The payload, a buffer at a time; then the footer.
  uint32_t crc = 0;
  uint64_t left = length;
  while (left > 0) {
    SLUICE_ASSIGN_OR_RETURN(size_t have,
                            buf.Ensure(std::min<uint64_t>(left, buf.buffer_size()), true));
    if (have == 0) {
      failed = TruncatedError(offset, tfrecord::kHeaderSize + (length - left), total);
      return failed;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, have));
    if (opts.verify_checksums) crc = crc32c::Extend(crc, buf.data(), n);
    buf.Consume(n);
    left -= n;
  }
  SLUICE_ASSIGN_OR_RETURN(size_t have, buf.Ensure(tfrecord::kFooterSize, true));
  if (have < tfrecord::kFooterSize) {
    failed = TruncatedError(offset, total - tfrecord::kFooterSize + have, total);
    return failed;
  }
  const uint32_t stored = tfrecord::DecodeFixed32(buf.data());
  buf.Consume(tfrecord::kFooterSize);
  const RecordFrame frame{offset, number, length};
  Status corrupt;
  if (opts.verify_checksums && stored != crc32c::Mask(crc)) {
    corrupt = DataChecksumError(offset, stored, crc32c::Mask(crc), length);
  }
  ++number;  // past it either way: the framing is intact
  expected_length.reset();
  if (!corrupt.ok()) return corrupt;
  return std::optional<RecordFrame>(frame);
}

Result<TFRecordReader> TFRecordReader::Open(const std::string& path,
                                            const TFRecordReaderOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return Open(std::move(file), options);
}

Result<TFRecordReader> TFRecordReader::Open(std::unique_ptr<ReadableFile> file,
                                            const TFRecordReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->opts = options;
  impl->compression = options.compression;
  if (impl->compression == Compression::kAuto) {
    uint8_t head[tfrecord::kHeaderSize];
    SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, head, sizeof(head)));
    impl->compression =
        DetectCompression(std::string_view(reinterpret_cast<const char*>(head), got));
  }
  file->AdviseSequential();
  SLUICE_ASSIGN_OR_RETURN(impl->known_file_size, file->Size());
  if (impl->compression == Compression::kNone) {
    impl->source = records_internal::NewPlainSource(file.get());
  } else {
    SLUICE_ASSIGN_OR_RETURN(impl->source, records_internal::NewInflateSource(
                                              file.get(), impl->compression, options.buffer_size));
  }
  // The reader's own buffers: buffer_size, at least 4 KiB.
  impl->buf =
      records_internal::ReadBuffer(impl->source.get(), file->name(),
                                   {.buffer_size = std::max<size_t>(options.buffer_size, 4096)});
  impl->file = std::move(file);
  return TFRecordReader(std::move(impl));
}

Status TFRecordReader::Seek(const RecordIndex& index, uint64_t number) {
  Impl& m = *impl_;
  if (number > index.size()) {
    return Status::OutOfRange(fmt::format("{}: cannot seek to record {}: the index lists {}",
                                          m.file->name(), number, index.size()));
  }
  const uint64_t offset = number == index.size() ? index.stream_size() : index[number].offset;
  if (m.compression == Compression::kNone) {
    SLUICE_ASSIGN_OR_RETURN(m.known_file_size, m.file->Size());
    if (index.stream_size() != m.known_file_size) {
      return Status::FailedPrecondition(
          fmt::format("{}: the index describes {} bytes but the file has {}; rebuild the index",
                      m.file->name(), index.stream_size(), m.known_file_size));
    }
  }
  SLUICE_RETURN_IF_ERROR(m.buf.SeekTo(offset));
  m.number = number;
  m.expected_length.reset();
  if (number < index.size()) m.expected_length = index[number].length - tfrecord::kFramingSize;
  return Status::OK();
}

Result<std::optional<Record>> TFRecordReader::Next() { return impl_->Next(); }
Result<std::optional<RecordFrame>> TFRecordReader::NextFrame() { return impl_->NextFrame(); }
const std::string& TFRecordReader::filename() const { return impl_->file->name(); }
Compression TFRecordReader::compression() const { return impl_->compression; }
uint64_t TFRecordReader::next_record_number() const { return impl_->number; }

size_t TFRecordReader::buffer_bytes() const {
  // Buffers of the reader's size, shared with records or not (small records
  // keep a whole one alive), and a bigger one only while no record holds it
  // (records are counted by whoever holds them).
  return impl_->buf.buffer_bytes();
}

TFRecordReader::TFRecordReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TFRecordReader::TFRecordReader(TFRecordReader&&) noexcept = default;
TFRecordReader& TFRecordReader::operator=(TFRecordReader&&) noexcept = default;
TFRecordReader::~TFRecordReader() = default;

}  // namespace sluice
