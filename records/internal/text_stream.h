// TextStream: the uncompressed bytes of a text file cut into units (lines,
// CSV records) that stay views into large read buffers. The line reader
// and the CSV reader share it; each brings a UnitScanner that says where a
// unit ends.
//
// A unit that crosses the end of a read buffer is carried over to the start
// of the next one; a unit longer than max_unit_size is an error naming the
// file and offset before it is held whole (the buffer grows only as real
// bytes arrive), after which the stream skips past it without keeping it.
//
// Not thread-safe: owned by one reader. Units it returned may be used on
// any thread (their `owner` keeps their bytes).
#ifndef SLUICE_RECORDS_INTERNAL_TEXT_STREAM_H_
#define SLUICE_RECORDS_INTERNAL_TEXT_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/buffer.h"
#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/compression.h"
#include "sluice/records/internal/byte_source.h"
#include "sluice/records/internal/read_buffer.h"

namespace sluice::records_internal {

// Finds the end of one unit. The stream shows it the unit's bytes so far,
// more of them on each call; the scanner keeps its own place.
class UnitScanner {
 public:
  static constexpr size_t kNotYet = static_cast<size_t>(-1);
  virtual ~UnitScanner() = default;
  // A new unit starts.
  virtual void Reset() = 0;
  // The unit's bytes so far are unit[0, n) (n grows from call to call).
  // Returns the unit's length with its terminator, or kNotYet.
  virtual size_t Scan(const char* unit, size_t n) = 0;
  // The stream ended inside the unit (n > 0 bytes of it, no terminator):
  // "" if the unit may end there, or the error text after "FILE:" (an open
  // quote: "LINE: column C: ...") for a unit that starts on `first_line`.
  virtual std::string AtEnd(uint64_t first_line) const = 0;
  // The unit's first n bytes (all it has shown) were dropped: the unit is
  // too long and is being skipped.
  virtual void Drop(size_t n) = 0;
  // Line breaks in the unit scanned so far (its terminator included).
  virtual uint64_t line_breaks() const = 0;
};

struct TextUnit {
  // The unit's bytes with its terminator; writable until handed out (a
  // reader may strip characters in place).
  char* data = nullptr;
  size_t size = 0;
  Buffer owner;
  uint64_t offset = 0;  // in the uncompressed stream
  uint64_t line = 1;    // 1-based line it starts on
};

class TextStream {
 public:
  // kAuto: gzip by its magic, zlib by a valid header that inflates, else
  // none. `buffer_size` bytes are read at a time (at least 4 KiB).
  static Result<std::unique_ptr<TextStream>> Open(std::unique_ptr<ReadableFile> file,
                                                  Compression compression, size_t buffer_size,
                                                  uint64_t max_unit_size);
  // The next unit, or nullopt at the clean end of the stream. Errors:
  //  - the byte stream's (a corrupt or truncated compressed stream:
  //    DataLoss); the stream stays there (moved_past() is false);
  //  - a unit longer than max_unit_size, or one the scanner refuses at the
  //    end of the stream (InvalidArgument): moved_past() is true and the
  //    next call goes on after it.
  // `what` names a unit in messages ("line", "record").
  Result<std::optional<TextUnit>> Next(UnitScanner& scanner, std::string_view what);
  // Whether the last error left the bad unit behind.
  bool moved_past() const { return moved_past_; }

  const std::string& name() const { return file_->name(); }
  Compression compression() const { return compression_; }
  // Bytes of read buffers held (see RecordReader::buffer_bytes).
  size_t buffer_bytes() const;

 private:
  TextStream() = default;
  // Reads more bytes after the buffered ones, making room first; 0 at the end.
  Result<size_t> Fill();
  Status SkipLongUnit(UnitScanner& scanner);
  Status EndError(uint64_t offset, uint64_t line, std::string_view what);

  std::unique_ptr<ReadableFile> file_;
  std::unique_ptr<ByteSource> source_;
  Compression compression_ = Compression::kNone;
  uint64_t max_unit_size_ = 0;
  // Stream bytes not yet handed out.
  ReadBuffer buf_;
  uint64_t line_ = 1;  // line of the next unit
  bool skipping_ = false;
  bool moved_past_ = false;
};

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_TEXT_STREAM_H_
