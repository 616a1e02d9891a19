// ReadBuffer: the read buffer under the streaming record readers (TFRecord,
// WebDataset tar, text lines and CSV, compressed fixed-length records).
//
// Stream bytes from a ByteSource land in a ref-counted Buffer: bytes
// [data(), data() + available()) are read and not yet consumed, and data()
// is at stream offset offset(). Records handed out are views that share
// buffer(), so a buffer still shared is never written again: when more room
// is needed, the unconsumed tail moves to the start of the buffer if nobody
// else holds it, else to a spare or a fresh one. Up to max_spares buffers of
// the reader's own size (buffer_size) are kept to recycle; a bigger one,
// made for a record larger than buffer_size, goes with its records.
//
// A length that cannot be checked against the file (read from a compressed
// stream or a pipe) is untrusted: Ensure() grows the buffer for it only as
// real bytes arrive, so a corrupt length never becomes a large allocation.
//
// Not thread-safe: owned by one reader. Views of buffer() may be used on any
// thread.
#ifndef SLUICE_RECORDS_INTERNAL_READ_BUFFER_H_
#define SLUICE_RECORDS_INTERNAL_READ_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/buffer.h"
#include "sluice/core/result.h"
#include "sluice/records/internal/byte_source.h"

namespace sluice::records_internal {

class ReadBuffer {
 public:
  struct Options {
    // The size of the reader's own buffers: every buffer has at least this
    // many bytes (the caller picks any minimum).
    size_t buffer_size = 4096;
    // Buffers of buffer_size kept to recycle once no record holds them.
    size_t max_spares = 3;
    // Reserve() leaves an unshared buffer larger than both buffer_size and
    // what it is asked for, for one of buffer_size (a long text line's buffer
    // does not outlive the line). Without it, a larger buffer is let go only
    // by ReleaseIfOversized().
    bool shrink = false;
  };

  // An empty buffer that cannot read (for members assigned later).
  ReadBuffer() = default;
  // Reads from `source`, which must outlive it. An allocation failure says
  // "reading NAME" (no context if `name` is empty).
  ReadBuffer(ByteSource* source, std::string name, Options options);

  // The unconsumed bytes: [data(), data() + available()), writable until
  // handed out.
  uint8_t* data() const { return buf_.data() + pos_; }
  size_t available() const { return end_ - pos_; }
  // Stream offset of data().
  uint64_t offset() const { return base_ + pos_; }
  // The buffer data() points into: what a record keeps to keep its bytes.
  const Buffer& buffer() const { return buf_; }
  size_t buffer_size() const { return opts_.buffer_size; }

  // REQUIRES: n <= available().
  void Consume(size_t n) { pos_ += n; }

  // Reads until `need` bytes are available or the source has no more now;
  // returns how many are available. A `trusted` need is allocated at once;
  // an untrusted one grows the buffer (doubling) only when it is full of
  // real bytes. Errors: the source's, and allocation failures.
  Result<size_t> Ensure(uint64_t need, bool trusted) {
    if (end_ - pos_ >= need) return end_ - pos_;
    return EnsureSlow(need, trusted);
  }

  // Makes room for at least `capacity` bytes from data() (and at least
  // buffer_size in all), moving the unconsumed bytes to the start of this
  // buffer, or of another when records hold this one.
  Status Reserve(size_t capacity);
  // True when no byte more fits after the buffered ones (or there is no
  // buffer yet): Reserve() before ReadSome().
  bool full() const { return end_ == buf_.size(); }
  // One read from the source into the room after the buffered bytes; the
  // bytes read (0: no more now). REQUIRES: !full().
  Result<size_t> ReadSome();

  // Moves to stream offset `offset`: within the buffered bytes if it is
  // there, else the source seeks and the buffer empties.
  Status SeekTo(uint64_t offset);

  // After a record: a buffer larger than buffer_size with every byte
  // consumed was made for the records in it; they keep it, the reader lets
  // go (it would otherwise stay resident after they are gone).
  void ReleaseIfOversized() {
    if (pos_ == end_ && buf_.size() > opts_.buffer_size) {
      base_ += pos_;
      pos_ = end_ = 0;
      buf_ = Buffer();
    }
  }

  // Bytes held: the spares, and the current buffer if it is of buffer_size
  // (shared with records or not: small records keep a whole one alive) or
  // bigger and unshared (records count what they hold).
  size_t buffer_bytes() const;

 private:
  Result<size_t> EnsureSlow(uint64_t need, bool trusted);

  ByteSource* source_ = nullptr;
  std::string name_;
  Options opts_;
  // Bytes [pos_, end_) of buf_ are unconsumed; buf_[0] is at offset base_.
  Buffer buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t base_ = 0;
  std::vector<Buffer> spares_;
};

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_READ_BUFFER_H_
