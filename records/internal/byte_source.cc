#include "sluice/records/internal/byte_source.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "sluice/records/tfrecord_format.h"

namespace sluice::records_internal {
namespace {

class PlainSource final : public ByteSource {
 public:
  explicit PlainSource(ReadableFile* file) : file_(file) {}

  Result<size_t> Read(uint8_t* dst, size_t n) override {
    Result<size_t> got = file_->ReadAt(pos_, dst, n);
    if (got.ok()) pos_ += *got;
    return got;
  }
  Status CheckCleanEnd() override { return Status::OK(); }
  Status SeekTo(uint64_t offset) override {
    pos_ = offset;
    return Status::OK();
  }
  std::string Where() const override { return ""; }

 private:
  ReadableFile* file_;
  uint64_t pos_ = 0;
};

class InflateSource final : public ByteSource {
 public:
  InflateSource(ReadableFile* file, Compression compression, size_t buffer_size)
      : file_(file), compression_(compression), in_(std::max<size_t>(buffer_size, 4096)) {}
  ~InflateSource() override {
    if (initialized_) inflateEnd(&strm_);
  }

  Status Init() {
    strm_ = {};
    const int bits =
        compression_ == Compression::kGzip ? tfrecord::kGzipWindowBits : tfrecord::kZlibWindowBits;
    if (inflateInit2(&strm_, bits) != Z_OK) {
      return Status::ResourceExhausted("cannot initialize zlib to read " + file_->name());
    }
    initialized_ = true;
    return Status::OK();
  }

  Result<size_t> Read(uint8_t* dst, size_t n) override {
    if (!error_.ok()) return error_;
    size_t produced = 0;
    while (produced < n) {
      if (strm_.avail_in == 0) {
        Result<size_t> got = file_->ReadAt(raw_pos_, in_.data(), in_.size());
        if (!got.ok()) return got.status();
        if (*got == 0) break;  // no more compressed bytes (for now)
        raw_pos_ += *got;
        strm_.next_in = in_.data();
        strm_.avail_in = static_cast<uInt>(*got);
      }
      if (member_ended_) {
        // More bytes after a complete member: another gzip member, or garbage.
        if (inflateReset(&strm_) != Z_OK) return Fail("cannot reset the zlib stream");
        member_ended_ = false;
        later_member_ = true;
        member_start_ = CompressedPos();
        member_produced_ = 0;
      }
      strm_.next_out = dst + produced;
      strm_.avail_out = static_cast<uInt>(std::min<size_t>(n - produced, 1u << 30));
      const uInt before = strm_.avail_out;
      const int ret = inflate(&strm_, Z_NO_FLUSH);
      const size_t made = before - strm_.avail_out;
      produced += made;
      stream_pos_ += made;
      member_produced_ += made;
      if (ret == Z_STREAM_END) {
        member_ended_ = true;
      } else if (ret == Z_BUF_ERROR && made == 0 && strm_.avail_in > 0) {
        return Fail("zlib made no progress");  // cannot happen with output space; never spin
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        // Hand out what was decompressed before the damage; the error comes next.
        if (later_member_ && member_produced_ == 0) {
          (void)Fail(fmt::format("garbage after the end of the {} stream at byte {}",
                                 CompressionName(compression_), member_start_));
        } else {
          (void)Fail(fmt::format("corrupt {} stream near byte {}: {}",
                                 CompressionName(compression_), CompressedPos(),
                                 strm_.msg ? strm_.msg : "inflate failed"));
        }
        if (produced > 0) return produced;
        return error_;
      }
    }
    return produced;
  }

  Status CheckCleanEnd() override {
    if (!error_.ok()) return error_;
    if (member_ended_) return Status::OK();
    // Nothing was ever decompressed from an empty file: a clean, empty stream.
    if (raw_pos_ == 0) return Status::OK();
    return Status::DataLoss(
        fmt::format("{}: {} stream is truncated: it ends at byte {} without "
                    "its end marker",
                    file_->name(), CompressionName(compression_), raw_pos_));
  }

  Status SeekTo(uint64_t offset) override {
    if (offset < stream_pos_) {
      // Start over: compressed streams can only be read forwards.
      inflateEnd(&strm_);
      initialized_ = false;
      raw_pos_ = stream_pos_ = member_start_ = member_produced_ = 0;
      member_ended_ = later_member_ = false;
      error_ = Status::OK();
      SLUICE_RETURN_IF_ERROR(Init());
    }
    std::vector<uint8_t> scratch(std::min<uint64_t>(offset - stream_pos_, 256 << 10));
    while (stream_pos_ < offset) {
      const size_t want = std::min<uint64_t>(offset - stream_pos_, scratch.size());
      SLUICE_ASSIGN_OR_RETURN(size_t got, Read(scratch.data(), want));
      if (got == 0) {
        return Status::OutOfRange(
            fmt::format("{}: cannot seek to stream offset {}: the {} stream "
                        "ends at {}",
                        file_->name(), offset, CompressionName(compression_), stream_pos_));
      }
    }
    return Status::OK();
  }

  std::string Where() const override {
    return fmt::format(", compressed offset {}", CompressedPos());
  }

 private:
  uint64_t CompressedPos() const { return raw_pos_ - strm_.avail_in; }

  Status Fail(std::string msg) {
    error_ = Status::DataLoss(file_->name() + ": " + msg);
    return error_;
  }

  ReadableFile* file_;
  Compression compression_;
  std::vector<uint8_t> in_;
  z_stream strm_{};
  bool initialized_ = false;
  uint64_t raw_pos_ = 0;          // compressed bytes read from the file
  uint64_t stream_pos_ = 0;       // uncompressed bytes produced
  bool member_ended_ = false;     // the last member read through its end marker
  bool later_member_ = false;     // a member after the first is being read
  uint64_t member_start_ = 0;     // compressed offset where it starts
  uint64_t member_produced_ = 0;  // bytes it has produced so far
  Status error_;
};

}  // namespace

std::unique_ptr<ByteSource> NewPlainSource(ReadableFile* file) {
  return std::make_unique<PlainSource>(file);
}

Result<std::unique_ptr<ByteSource>> NewInflateSource(ReadableFile* file, Compression compression,
                                                     size_t buffer_size) {
  auto src = std::make_unique<InflateSource>(file, compression, buffer_size);
  SLUICE_RETURN_IF_ERROR(src->Init());
  return std::unique_ptr<ByteSource>(std::move(src));
}

}  // namespace sluice::records_internal
