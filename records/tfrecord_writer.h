// TFRecordWriter: writes records to a TFRecord file, as TensorFlow does.
//
// Output is byte-identical to tf.io.TFRecordWriter for every compression
// (same framing; zlib/gzip with TensorFlow's parameters) unless Flush() is
// called on a compressed file, which inserts a zlib sync point.
//
// Crash-safe: by default the records go to a hidden temporary file beside
// PATH and Close() renames it to PATH, so PATH never holds a partial file.
// A writer destroyed without Close() deletes its temporary file: call
// Close() and check its Status to publish. With `atomic = false` the writer
// writes PATH directly (for readers that follow a file as it grows, with
// TFRecordReaderOptions::allow_truncated_tail).
//
// PATH.idx, the record index beside PATH (record_index.h), describes PATH's
// bytes: a writer that replaces PATH removes an old PATH.idx before the new
// PATH appears (at Close(), or at Open() with `atomic = false`), and with
// `write_index` publishes the new index after the data. A crash at any
// moment leaves PATH with its own index or with none, never with another
// version's; and the index names the data's size and CRC-32C (its trailer),
// so that readers also detect an index that a writer without this rule left.
//
// PATH "-" (standard output), a FIFO or a terminal is written as a stream:
// in place, without a temporary name, an index or fsync.
//
// After any error, every later call returns the same error. Not thread-safe.
#ifndef SLUICE_RECORDS_TFRECORD_WRITER_H_
#define SLUICE_RECORDS_TFRECORD_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/records/compression.h"

namespace sluice {

struct TFRecordWriterOptions {
  // kNone, kZlib or kGzip (kAuto is InvalidArgument).
  Compression compression = Compression::kNone;
  // zlib level 0-9, or -1 for zlib's default (6), as TensorFlow uses.
  int compression_level = -1;
  // Bytes buffered before a write(2).
  size_t buffer_size = 256 << 10;
  // Write under a temporary name and rename on Close().
  bool atomic = true;
  // With atomic = false and no compression: append records to PATH (made
  // if missing) instead of truncating it; PATH must end on a record
  // boundary (snapshot's resumed shards truncate it to one first).
  bool append = false;
  // fsync the file (and, when atomic, its directory) before Close() returns;
  // the .idx (write_index) likewise.
  bool sync_on_close = false;
  // Also write PATH.idx (see record_index.h) on Close().
  bool write_index = false;
  // Keep the CRC-32C of the file's bytes as they are written
  // (file_crc32c()); implied by write_index, whose trailer records it. Off,
  // the bytes are not read a second time.
  bool digest = false;
};

class TFRecordWriter {
 public:
  static Result<TFRecordWriter> Open(const std::string& path,
                                     const TFRecordWriterOptions& options = {});

  TFRecordWriter(TFRecordWriter&&) noexcept;
  TFRecordWriter& operator=(TFRecordWriter&&) noexcept;
  // Discards the output unless Close() succeeded.
  ~TFRecordWriter();

  Status Write(std::string_view record);
  // Hands buffered bytes to the OS; for a compressed file, also ends the
  // current deflate block so everything written so far can be decompressed.
  // With atomic = true the bytes stay in the temporary file until Close().
  Status Flush();
  // Finishes the stream, writes the index if asked, and publishes PATH.
  Status Close();

  const std::string& path() const;
  uint64_t records_written() const;
  // Bytes of the uncompressed record stream written so far.
  uint64_t bytes_written() const;
  // The file's bytes handed to the OS so far (compressed ones for a
  // compressed file; all of them after Close()), and, with digest or
  // write_index, their CRC-32C (0 otherwise): what the index's trailer
  // records.
  uint64_t file_bytes() const;
  uint32_t file_crc32c() const;

 private:
  struct Impl;
  explicit TFRecordWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_TFRECORD_WRITER_H_
