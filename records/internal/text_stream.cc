#include "sluice/records/internal/text_stream.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

namespace sluice::records_internal {
namespace {

constexpr size_t kHeadBytes = 4096;

// True when `head` starts a zlib stream that inflates without an error: a
// text file may begin with two bytes that pass the zlib header check ("x^").
bool InflatesAsZlib(const uint8_t* head, size_t n) {
  if (n < 2 || (head[0] & 0x0f) != 8 || (head[0] >> 4) > 7 || ((head[0] << 8) | head[1]) % 31) {
    return false;
  }
  z_stream s{};
  if (inflateInit(&s) != Z_OK) return false;
  s.next_in = const_cast<uint8_t*>(head);
  s.avail_in = static_cast<uInt>(n);
  uint8_t out[16384];
  int ret = Z_OK;
  for (int i = 0; i < 64 && ret == Z_OK && s.avail_in > 0; ++i) {
    s.next_out = out;
    s.avail_out = sizeof(out);
    ret = inflate(&s, Z_NO_FLUSH);
  }
  inflateEnd(&s);
  return ret == Z_OK || ret == Z_STREAM_END || ret == Z_BUF_ERROR;
}

}  // namespace

Result<std::unique_ptr<TextStream>> TextStream::Open(std::unique_ptr<ReadableFile> file,
                                                     Compression compression, size_t buffer_size,
                                                     uint64_t max_unit_size) {
  std::unique_ptr<TextStream> s(new TextStream());
  s->max_unit_size_ = max_unit_size;
  if (compression == Compression::kAuto) {
    uint8_t head[kHeadBytes];
    SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(0, head, sizeof(head)));
    compression = Compression::kNone;
    if (got >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
      compression = Compression::kGzip;
    } else if (InflatesAsZlib(head, got)) {
      compression = Compression::kZlib;
    }
  }
  s->compression_ = compression;
  file->AdviseSequential();
  if (compression == Compression::kNone) {
    s->source_ = NewPlainSource(file.get());
  } else {
    SLUICE_ASSIGN_OR_RETURN(s->source_, NewInflateSource(file.get(), compression, buffer_size));
  }
  // Long units' buffers do not outlive them (Options::shrink).
  s->buf_ = ReadBuffer(s->source_.get(), file->name(),
                       {.buffer_size = std::max<size_t>(buffer_size, 4096), .shrink = true});
  s->file_ = std::move(file);
  return s;
}

Result<size_t> TextStream::Fill() {
  if (buf_.full()) {
    // Full: the unit so far (if any) moves to the start of a buffer with
    // room; one that fills most of a buffer doubles it, up to the limit.
    const uint64_t n = buf_.available();
    uint64_t capacity = buf_.buffer_size();
    if (2 * n > capacity) capacity = std::min<uint64_t>(2 * n, max_unit_size_ + 1);
    capacity = std::max<uint64_t>(capacity, n + 1);
    SLUICE_RETURN_IF_ERROR(buf_.Reserve(static_cast<size_t>(capacity)));
  }
  return buf_.ReadSome();
}

Status TextStream::EndError(uint64_t offset, uint64_t line, std::string_view what) {
  Status clean = source_->CheckCleanEnd();
  if (clean.ok()) return clean;
  return Status::DataLoss(fmt::format("{}: {} {} at offset {}{}: {}", name(), what, line, offset,
                                      source_->Where(), clean.message()));
}

Status TextStream::SkipLongUnit(UnitScanner& scanner) {
  while (true) {
    const size_t n = buf_.available();
    if (n > 0) {
      const size_t len = scanner.Scan(reinterpret_cast<const char*>(buf_.data()), n);
      if (len != UnitScanner::kNotYet) {
        line_ += scanner.line_breaks();
        buf_.Consume(len);
        skipping_ = false;
        return Status::OK();
      }
      scanner.Drop(n);
      buf_.Consume(n);
    }
    SLUICE_ASSIGN_OR_RETURN(size_t got, Fill());
    if (got == 0) {
      SLUICE_RETURN_IF_ERROR(EndError(buf_.offset(), line_, "the text after"));
      line_ += scanner.line_breaks();
      skipping_ = false;
      return Status::OK();
    }
  }
}

Result<std::optional<TextUnit>> TextStream::Next(UnitScanner& scanner, std::string_view what) {
  moved_past_ = false;
  if (skipping_) SLUICE_RETURN_IF_ERROR(SkipLongUnit(scanner));
  scanner.Reset();
  while (true) {
    const size_t n = buf_.available();
    char* unit = reinterpret_cast<char*>(buf_.data());
    const uint64_t offset = buf_.offset();
    if (n > 0) {
      const size_t len = scanner.Scan(unit, n);
      if (len != UnitScanner::kNotYet) {
        TextUnit out{unit, len, buf_.buffer(), offset, line_};
        line_ += scanner.line_breaks();
        buf_.Consume(len);
        return std::optional<TextUnit>(std::move(out));
      }
      if (n > max_unit_size_) {
        skipping_ = true;
        moved_past_ = true;
        return Status::InvalidArgument(
            fmt::format("{}: {} {} at offset {}: longer than the limit of {} bytes", name(), what,
                        line_, offset, max_unit_size_));
      }
    }
    SLUICE_ASSIGN_OR_RETURN(size_t got, Fill());
    if (got > 0) continue;
    // The end of the stream.
    SLUICE_RETURN_IF_ERROR(EndError(offset, line_, what));
    if (n == 0) return std::optional<TextUnit>();
    unit = reinterpret_cast<char*>(buf_.data());  // Fill may have moved it
    TextUnit out{unit, n, buf_.buffer(), offset, line_};
    const std::string bad = scanner.AtEnd(line_);
    line_ += scanner.line_breaks();
    buf_.Consume(n);
    if (!bad.empty()) {
      moved_past_ = true;
      return Status::InvalidArgument(fmt::format("{}:{} (offset {})", name(), bad, offset));
    }
    return std::optional<TextUnit>(std::move(out));
  }
}

size_t TextStream::buffer_bytes() const { return buf_.buffer_bytes(); }

}  // namespace sluice::records_internal
