#include "sluice/records/tfrecord_writer.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "sluice/core/file.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_format.h"

namespace sluice {

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

  ~Impl() {
    if (deflating) deflateEnd(&strm);
  }

  Status Fail(Status s) {
    error = std::move(s);
    if (out) out->Abandon();
    return error;
  }

  Status FlushBuffer() {
    if (deflating) {
      Status s = out->Append(std::string_view(reinterpret_cast<const char*>(zout.data()), zused));
      zused = 0;
      return s;
    }
    Status s = out->Append(buf);
    buf.clear();
    return s;
  }

  // Appends uncompressed stream bytes.
  Status Emit(const void* data, size_t n) {
    if (!deflating) {
      if (buf.size() + n > opts.buffer_size) {
        SLUICE_RETURN_IF_ERROR(FlushBuffer());
        if (n >= opts.buffer_size) {
          return out->Append(std::string_view(static_cast<const char*>(data), n));
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
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->opts = options;
  impl->opts.buffer_size = std::max<size_t>(options.buffer_size, 4096);
  SLUICE_ASSIGN_OR_RETURN(impl->out,
                          OutputFile::Create(path, {options.atomic, options.sync_on_close}));
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
  if (s.ok()) s = m.out->Commit();
  if (!s.ok()) return m.Fail(s);
  m.out.reset();
  if (m.opts.write_index) {
    Status idx =
        RecordIndex(std::move(m.index)).Save(RecordIndex::PathFor(m.path), m.opts.sync_on_close);
    if (!idx.ok()) return m.Fail(idx);
  }
  return Status::OK();
}

const std::string& TFRecordWriter::path() const { return impl_->path; }
uint64_t TFRecordWriter::records_written() const { return impl_->records; }
uint64_t TFRecordWriter::bytes_written() const { return impl_->stream_bytes; }

TFRecordWriter::TFRecordWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TFRecordWriter::TFRecordWriter(TFRecordWriter&&) noexcept = default;
TFRecordWriter& TFRecordWriter::operator=(TFRecordWriter&&) noexcept = default;
TFRecordWriter::~TFRecordWriter() = default;

}  // namespace sluice
