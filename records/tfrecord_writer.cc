#include "sluice/records/tfrecord_writer.h"
#include "sluice/core/filesystem.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "sluice/core/file.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_format.h"

namespace sluice {

namespace {

// Removes PATH.idx: it describes the file PATH is about to stop being.
Status RemoveStaleIndex(const std::string& path) {
  const std::string idx = RecordIndex::PathFor(path);
  if (IsRemotePath(idx)) {
    const Status s = DeletePath(idx);
    if (s.ok()) return s;
    return Status::FailedPrecondition(
        fmt::format("writing {}: cannot remove the index of the object it replaces, {}: {}", path,
                    idx, s.message()));
  }
  if (::unlink(idx.c_str()) == 0 || errno == ENOENT || errno == ENOTDIR) return Status::OK();
  return Status::FailedPrecondition(
      fmt::format("writing {}: cannot remove the index of the file it replaces, {}: {}", path, idx,
                  std::strerror(errno)));
}

}  // namespace

struct TFRecordWriter::Impl {
  std::string path;
  TFRecordWriterOptions opts;
  std::unique_ptr<OutputFile> out;
  std::string buf;            // pending uncompressed output
  std::vector<uint8_t> zout;  // pending compressed output: zout[0, zused)
  size_t zused = 0;
  z_stream strm{};
  bool deflating = false;
  Status error;
  uint64_t records = 0;
  uint64_t stream_bytes = 0;
  std::vector<RecordIndexEntry> index;
  // The file's bytes as written (compressed for a compressed file), for the
  // index's trailer; the CRC only if `digest`.
  RecordIndexData file;
  bool digest = false;

  ~Impl() {
    if (deflating) deflateEnd(&strm);
  }

  Status Fail(Status s) {
    error = std::move(s);
    if (out) out->Abandon();
    return error;
  }

  // Every byte of the file goes through here.
  Status Append(std::string_view bytes) {
    if (digest) file.crc32c = crc32c::Extend(file.crc32c, bytes.data(), bytes.size());
    file.bytes += bytes.size();
    return out->Append(bytes);
  }

  Status FlushBuffer() {
    if (deflating) {
      Status s = Append(std::string_view(reinterpret_cast<const char*>(zout.data()), zused));
      zused = 0;
      return s;
    }
    Status s = Append(buf);
    buf.clear();
    return s;
  }

  // Appends uncompressed stream bytes.
  Status Emit(const void* data, size_t n) {
    if (!deflating) {
      if (buf.size() + n > opts.buffer_size) {
        SLUICE_RETURN_IF_ERROR(FlushBuffer());
        if (n >= opts.buffer_size) {
          return Append(std::string_view(static_cast<const char*>(data), n));
        }
      }
      buf.append(static_cast<const char*>(data), n);
      return Status::OK();
    }
    strm.next_in = static_cast<Bytef*>(const_cast<void*>(data));
    while (n > 0) {
      const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
      strm.avail_in = chunk;
      SLUICE_RETURN_IF_ERROR(Deflate(Z_NO_FLUSH));
      n -= chunk;
    }
    return Status::OK();
  }

  // Runs deflate until it has consumed its input (and, for a flush, emitted
  // everything), growing `buf` and writing it out when full.
  Status Deflate(int flush) {
    while (true) {
      if (zused == zout.size()) SLUICE_RETURN_IF_ERROR(FlushBuffer());
      strm.next_out = zout.data() + zused;
      strm.avail_out = static_cast<uInt>(zout.size() - zused);
      const int ret = deflate(&strm, flush);
      zused = zout.size() - strm.avail_out;
      if (ret == Z_STREAM_ERROR) return Status::Internal("deflate failed writing " + path);
      if (flush == Z_FINISH) {
        if (ret == Z_STREAM_END) return Status::OK();
        continue;
      }
      if (strm.avail_in == 0 && strm.avail_out != 0) return Status::OK();
    }
  }
};

Result<TFRecordWriter> TFRecordWriter::Open(const std::string& path,
                                            const TFRecordWriterOptions& options) {
  if (options.compression == Compression::kAuto) {
    return Status::InvalidArgument("writing " + path +
                                   ": compression must be none, zlib or gzip, not auto");
  }
  if (options.compression_level < -1 || options.compression_level > 9) {
    return Status::InvalidArgument(fmt::format("writing {}: compression_level {} is not in -1..9",
                                               path, options.compression_level));
  }
  if (options.append && (options.atomic || options.compression != Compression::kNone)) {
    return Status::InvalidArgument("writing " + path +
                                   ": append needs atomic = false and no compression");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->opts = options;
  impl->opts.buffer_size = std::max<size_t>(options.buffer_size, 4096);
  impl->digest = options.digest || options.write_index;
  SLUICE_ASSIGN_OR_RETURN(impl->out, OutputFile::Create(path, {.atomic = options.atomic,
                                                               .sync = options.sync_on_close,
                                                               .append = options.append}));
  if (impl->out->is_stream()) {
    if (options.write_index) {
      return Status::InvalidArgument("writing " + impl->out->path() +
                                     ": a stream (standard output, a pipe) cannot have an index");
    }
  } else if (!options.atomic) {
    // PATH is being rewritten in place: its old index no longer holds.
    SLUICE_RETURN_IF_ERROR(RemoveStaleIndex(path));
  }
  if (options.compression == Compression::kNone) {
    impl->buf.reserve(impl->opts.buffer_size);
  } else {
    impl->zout.resize(impl->opts.buffer_size);
    const int bits = options.compression == Compression::kGzip ? tfrecord::kGzipWindowBits
                                                               : tfrecord::kZlibWindowBits;
    if (deflateInit2(&impl->strm, options.compression_level, Z_DEFLATED, bits,
                     tfrecord::kZlibMemLevel, Z_DEFAULT_STRATEGY) != Z_OK) {
      return Status::ResourceExhausted("cannot initialize zlib to write " + path);
    }
    impl->deflating = true;
  }
  return TFRecordWriter(std::move(impl));
}

Status TFRecordWriter::Write(std::string_view record) {
  Impl& m = *impl_;
  if (!m.error.ok()) return m.error;
  if (!m.out) return Status::FailedPrecondition("writing " + m.path + ": the writer is closed");
  uint8_t header[tfrecord::kHeaderSize];
  tfrecord::EncodeHeader(record.size(), header);
  uint8_t footer[tfrecord::kFooterSize];
  tfrecord::EncodeFixed32(crc32c::Mask(crc32c::Value(record.data(), record.size())), footer);
  Status s = m.Emit(header, sizeof(header));
  if (s.ok()) s = m.Emit(record.data(), record.size());
  if (s.ok()) s = m.Emit(footer, sizeof(footer));
  if (!s.ok()) return m.Fail(s);
  const uint64_t framed = record.size() + tfrecord::kFramingSize;
  if (m.opts.write_index) m.index.push_back({m.stream_bytes, framed});
  m.stream_bytes += framed;
  ++m.records;
  return Status::OK();
}

Status TFRecordWriter::Flush() {
  Impl& m = *impl_;
  if (!m.error.ok()) return m.error;
  if (!m.out) return Status::FailedPrecondition("flushing " + m.path + ": the writer is closed");
  Status s;
  if (m.deflating) {
    m.strm.avail_in = 0;
    s = m.Deflate(Z_SYNC_FLUSH);
  }
  if (s.ok()) s = m.FlushBuffer();
  return s.ok() ? s : m.Fail(s);
}

Status TFRecordWriter::Close() {
  Impl& m = *impl_;
  if (!m.error.ok()) return m.error;
  if (!m.out) return Status::FailedPrecondition("closing " + m.path + ": already closed");
  Status s;
  if (m.deflating) {
    m.strm.avail_in = 0;
    s = m.Deflate(Z_FINISH);
  }
  if (s.ok()) s = m.FlushBuffer();
  // The new index is written (under its temporary name) first, so that the
  // time without one is short; the index of an older PATH is removed before
  // the new data is renamed in, so that no crash can leave it beside the new
  // data; the new index is renamed in last (docs/formats.md).
  std::unique_ptr<OutputFile> idx;
  if (s.ok() && m.opts.write_index) {
    Result<std::unique_ptr<OutputFile>> created = OutputFile::Create(
        RecordIndex::PathFor(m.path), {.atomic = true, .sync = m.opts.sync_on_close});
    if (created.ok()) {
      idx = std::move(created).value();
      s = idx->Append(RecordIndex(std::move(m.index), m.file).ToText());
    } else {
      s = created.status();
    }
  }
  if (s.ok() && m.opts.atomic && !m.out->is_stream()) s = RemoveStaleIndex(m.path);
  if (s.ok()) s = m.out->Commit();
  if (!s.ok()) return m.Fail(s);
  m.out.reset();
  if (idx) {
    Status published = idx->Commit();
    if (!published.ok()) return m.Fail(published);
  }
  return Status::OK();
}

const std::string& TFRecordWriter::path() const { return impl_->path; }
uint64_t TFRecordWriter::records_written() const { return impl_->records; }
uint64_t TFRecordWriter::bytes_written() const { return impl_->stream_bytes; }
uint64_t TFRecordWriter::file_bytes() const { return impl_->file.bytes; }
uint32_t TFRecordWriter::file_crc32c() const { return impl_->file.crc32c; }

TFRecordWriter::TFRecordWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TFRecordWriter::TFRecordWriter(TFRecordWriter&&) noexcept = default;
TFRecordWriter& TFRecordWriter::operator=(TFRecordWriter&&) noexcept = default;
TFRecordWriter::~TFRecordWriter() = default;

}  // namespace sluice
