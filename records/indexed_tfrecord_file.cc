#include "sluice/records/indexed_tfrecord_file.h"

#include <fmt/format.h>

#include "sluice/records/compression.h"
#include "sluice/records/tfrecord_format.h"

namespace sluice {

struct IndexedTFRecordFile::Impl {
  std::unique_ptr<ReadableFile> file;
  RecordIndex index;
  IndexedTFRecordFileOptions opts;
  uint64_t file_size = 0;  // at Open; the index ends exactly here

  std::string Where(uint64_t number, uint64_t offset) const {
    return fmt::format("{}: record {} at offset {}", file->name(), number, offset);
  }
};

namespace {

// InvalidArgument unless `file` holds an uncompressed TFRecord stream.
Status CheckUncompressed(ReadableFile& file) {
  uint8_t head[tfrecord::kHeaderSize];
  SLUICE_ASSIGN_OR_RETURN(size_t got, file.ReadAt(0, head, sizeof(head)));
  const Compression c =
      DetectCompression(std::string_view(reinterpret_cast<const char*>(head), got));
  if (c == Compression::kNone) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("{}: the file is {}-compressed; reading records at random needs an "
                  "uncompressed TFRecord file (rewrite it without compression, or read it in "
                  "order with TFRecordReader)",
                  file.name(), CompressionName(c)));
}

}  // namespace

Result<IndexedTFRecordFile> IndexedTFRecordFile::Open(const std::string& path,
                                                      const IndexedTFRecordFileOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  // Before looking for the index: a compressed file is refused whether or not
  // it has one.
  SLUICE_RETURN_IF_ERROR(CheckUncompressed(*file));
  SLUICE_ASSIGN_OR_RETURN(RecordIndex index, RecordIndex::LoadFor(path));
  return Open(std::move(file), std::move(index), options);
}

Result<IndexedTFRecordFile> IndexedTFRecordFile::Open(const std::string& path, RecordIndex index,
                                                      const IndexedTFRecordFileOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, OpenReadableFile(path));
  return Open(std::move(file), std::move(index), options);
}

Result<IndexedTFRecordFile> IndexedTFRecordFile::Open(std::unique_ptr<ReadableFile> file,
                                                      RecordIndex index,
                                                      const IndexedTFRecordFileOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckUncompressed(*file));
  auto impl = std::make_shared<Impl>();
  SLUICE_ASSIGN_OR_RETURN(impl->file_size, file->Size());
  if (index.stream_size() != impl->file_size) {
    return Status::FailedPrecondition(
        fmt::format("{}: stale index: it describes {} bytes but the file has {}; rebuild it with "
                    "`sluice index`",
                    file->name(), index.stream_size(), impl->file_size));
  }
  impl->file = std::move(file);
  impl->index = std::move(index);
  impl->opts = options;
  return IndexedTFRecordFile(std::move(impl));
}

Result<Record> IndexedTFRecordFile::Read(uint64_t i) const {
  Buffer scratch;
  return Read(i, &scratch);
}

Status IndexedTFRecordFile::CheckEntry(uint64_t i) const {
  const Impl& m = *impl_;
  if (i >= m.index.size()) {
    return Status::OutOfRange(fmt::format("{}: cannot read record {}: the index lists {}",
                                          m.file->name(), i, m.index.size()));
  }
  const RecordIndexEntry& e = m.index[i];
  // The index was checked to end at the file size, but a RecordIndex made
  // by hand need not be contiguous: never trust an entry past the file.
  if (e.length < tfrecord::kFramingSize || e.offset > m.file_size ||
      e.length > m.file_size - e.offset) {
    return Status::DataLoss(
        fmt::format("{}: the index entry's length {} does not fit in the file's {} bytes; "
                    "rebuild the index",
                    m.Where(i, e.offset), e.length, m.file_size));
  }
  const uint64_t payload = e.length - tfrecord::kFramingSize;
  if (payload > m.opts.max_record_size) {
    return Status::DataLoss(fmt::format("{}: record length {} exceeds max_record_size {}",
                                        m.Where(i, e.offset), payload, m.opts.max_record_size));
  }
  return Status::OK();
}

Result<Record> IndexedTFRecordFile::CheckFramed(uint64_t i, const uint8_t* bytes,
                                                const Buffer& owner) const {
  const Impl& m = *impl_;
  const RecordIndexEntry& e = m.index[i];
  const uint64_t payload = e.length - tfrecord::kFramingSize;
  if (!tfrecord::HeaderChecksumOk(bytes)) {
    return Status::DataLoss(fmt::format(
        "{}: corrupt record header: the length checksum does not match (stored 0x{:08x}, "
        "computed 0x{:08x}); the file is damaged or the index does not describe it",
        m.Where(i, e.offset), tfrecord::DecodeFixed32(bytes + tfrecord::kLengthSize),
        crc32c::Mask(crc32c::Value(bytes, tfrecord::kLengthSize))));
  }
  const uint64_t length = tfrecord::DecodeFixed64(bytes);
  if (length != payload) {
    return Status::DataLoss(
        fmt::format("{}: the index says {} bytes but the record holds {}; rebuild the index",
                    m.Where(i, e.offset), payload, length));
  }
  const uint8_t* data = bytes + tfrecord::kHeaderSize;
  if (m.opts.verify_checksums) {
    const uint32_t stored = tfrecord::DecodeFixed32(data + payload);
    const uint32_t computed = crc32c::Mask(crc32c::Value(data, payload));
    if (stored != computed) {
      return Status::DataLoss(fmt::format(
          "{}: corrupt record data: the data checksum does not match (stored 0x{:08x}, computed "
          "0x{:08x}); {} bytes",
          m.Where(i, e.offset), stored, computed, payload));
    }
  }
  return Record{std::string_view(reinterpret_cast<const char*>(data), payload), owner, e.offset, i};
}

Result<Record> IndexedTFRecordFile::Read(uint64_t i, Buffer* scratch) const {
  const Impl& m = *impl_;
  SLUICE_RETURN_IF_ERROR(CheckEntry(i));
  const RecordIndexEntry& e = m.index[i];
  const size_t framed = static_cast<size_t>(e.length);
  if (!*scratch || !scratch->unique() || scratch->size() < framed) {
    Result<Buffer> fresh = Buffer::Allocate(framed);
    if (!fresh.ok()) return fresh.status().WithContext(m.Where(i, e.offset));
    *scratch = std::move(fresh).value();
  }
  uint8_t* bytes = scratch->data();
  Result<size_t> got = m.file->ReadAt(e.offset, bytes, framed);
  if (!got.ok()) return got.status().WithContext(fmt::format("reading record {}", i));
  if (*got < framed) {
    return Status::DataLoss(
        fmt::format("{}: truncated: the index says the record takes {} bytes but the file "
                    "ends {} bytes in (did the file shrink after it was opened?)",
                    m.Where(i, e.offset), framed, *got));
  }
  return CheckFramed(i, bytes, *scratch);
}

Result<std::vector<Record>> IndexedTFRecordFile::ReadRun(uint64_t first, size_t max_bytes,
                                                         uint64_t stride) const {
  const Impl& m = *impl_;
  stride = std::max<uint64_t>(stride, 1);
  SLUICE_RETURN_IF_ERROR(CheckEntry(first));
  // The longest run of adjacent records from `first` within max_bytes (at
  // least one record, whatever its size).
  const uint64_t start = m.index[first].offset;
  uint64_t end = start + m.index[first].length;
  uint64_t last = first;
  while (last + 1 < m.index.size()) {
    const RecordIndexEntry& next = m.index[last + 1];
    if (next.offset != end || end - start + next.length > max_bytes) break;
    if (!CheckEntry(last + 1).ok()) break;  // read alone later, with its error
    end += next.length;
    ++last;
  }
  const size_t bytes = static_cast<size_t>(end - start);
  Result<Buffer> buf = Buffer::Allocate(bytes);
  if (!buf.ok()) return buf.status().WithContext(m.Where(first, start));
  Result<size_t> got = m.file->ReadAt(start, buf->data(), bytes);
  if (!got.ok()) return got.status().WithContext(fmt::format("reading record {}", first));
  if (*got < bytes) {
    return Status::DataLoss(
        fmt::format("{}: truncated: the index says records {}..{} take {} bytes but the file "
                    "ends {} bytes in (did the file shrink after it was opened?)",
                    m.Where(first, start), first, last, bytes, *got));
  }
  std::vector<Record> run;
  run.reserve(static_cast<size_t>((last - first) / stride + 1));
  for (uint64_t i = first; i <= last; i += stride) {
    Result<Record> r = CheckFramed(i, buf->data() + (m.index[i].offset - start), *buf);
    if (!r.ok()) {
      if (i == first) return r.status();
      break;  // the good records before it; reading from i reports the error
    }
    run.push_back(std::move(r).value());
  }
  return run;
}

uint64_t IndexedTFRecordFile::num_records() const { return impl_->index.size(); }
const std::string& IndexedTFRecordFile::path() const { return impl_->file->name(); }
const RecordIndex& IndexedTFRecordFile::index() const { return impl_->index; }

RecordExtent IndexedTFRecordFile::extent(uint64_t i) const {
  const RecordIndexEntry& e = impl_->index[static_cast<size_t>(i)];
  return {e.offset, e.length};
}

IndexedTFRecordFile::IndexedTFRecordFile(std::shared_ptr<const Impl> impl)
    : impl_(std::move(impl)) {}
IndexedTFRecordFile::IndexedTFRecordFile(const IndexedTFRecordFile&) = default;
IndexedTFRecordFile& IndexedTFRecordFile::operator=(const IndexedTFRecordFile&) = default;
IndexedTFRecordFile::IndexedTFRecordFile(IndexedTFRecordFile&&) noexcept = default;
IndexedTFRecordFile& IndexedTFRecordFile::operator=(IndexedTFRecordFile&&) noexcept = default;
IndexedTFRecordFile::~IndexedTFRecordFile() = default;

}  // namespace sluice
