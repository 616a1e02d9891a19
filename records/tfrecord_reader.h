// TFRecordReader: reads the records of one TFRecord file in order.
//
// Uncompressed, ZLIB and GZIP files are read exactly as TensorFlow writes
// them (see tfrecord_format.h). Reads are large and sequential (1 MiB by
// default) and records are handed out as views into the read buffer: a
// Record's `owner` keeps its bytes alive, so keeping a Record (or a string
// tensor made from it) never copies and never dangles.
//
// Errors name the file, the byte offset and the record number:
//  - a corrupt header (its length checksum fails) or a truncated record is
//    DataLoss, and the reader stays there: calling Next() again repeats it;
//  - a data checksum mismatch is DataLoss, after which Next() continues with
//    the following record, so a caller may skip the bad one;
//  - a length larger than what remains in the file is reported without
//    allocating it.
// With allow_truncated_tail, a last record cut short is the end of the data
// instead, and a later Next() picks up where it stopped once the file has
// grown: how to follow a file that is still being written.
//
// NextFrame() reads a record's framing and streams its payload through the
// data checksum without keeping it: what counting and verifying need, in
// buffer_size bytes of memory whatever the records' lengths.
//
// Not thread-safe: use one reader per thread. Records it returned may be
// used on any thread.
#ifndef SLUICE_RECORDS_TFRECORD_READER_H_
#define SLUICE_RECORDS_TFRECORD_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/buffer.h"
#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/compression.h"
#include "sluice/records/record_source.h"

namespace sluice {

class RecordIndex;

struct TFRecordReaderOptions {
  // kAuto detects the compression from the first bytes.
  Compression compression = Compression::kAuto;
  // Bytes per read from the file (and of decompressed stream). Records larger
  // than this get a buffer of their own size.
  size_t buffer_size = size_t{1} << 20;
  // Check each record's data CRC. The header CRC is always checked: it guards
  // the framing, and a corrupt length must never be trusted.
  bool verify_checksums = true;
  // Treat a truncated last record as the end of the data (see above).
  bool allow_truncated_tail = false;
  // Records longer than this are DataLoss, before anything is allocated for
  // them. Guards against decompression bombs; uncompressed lengths are also
  // checked against the file size. NextFrame() holds no record, so only
  // this limit applies there.
  uint64_t max_record_size = uint64_t{1} << 32;
};

// Where a record lies, without its bytes (NextFrame()).
struct RecordFrame {
  uint64_t offset = 0;  // of the header in the (uncompressed) stream
  uint64_t number = 0;  // 0-based position in the file
  uint64_t length = 0;  // payload bytes
};

class TFRecordReader : public RecordReader {
 public:
  static Result<TFRecordReader> Open(const std::string& path,
                                     const TFRecordReaderOptions& options = {});
  static Result<TFRecordReader> Open(std::unique_ptr<ReadableFile> file,
                                     const TFRecordReaderOptions& options = {});

  TFRecordReader(TFRecordReader&&) noexcept;
  TFRecordReader& operator=(TFRecordReader&&) noexcept;
  ~TFRecordReader() override;

  // The next record, or nullopt at the end of the file.
  Result<std::optional<Record>> Next() override;
  // The next record's place and length, its payload read and checked
  // (verify_checksums) in buffer_size pieces and dropped: memory does not
  // grow with the record. The same errors as Next(); a compressed stream
  // that ends inside a record leaves the reader failed (every later call
  // repeats the error). REQUIRES: !allow_truncated_tail.
  Result<std::optional<RecordFrame>> NextFrame();

  // Positions the reader so that Next() returns record `number`, using
  // `index` (which must describe this file). Uncompressed files seek
  // directly; compressed ones decompress forward to the record (from the
  // start if it lies behind). OutOfRange past the last record.
  Status Seek(const RecordIndex& index, uint64_t number);
  // RecordReader's Seek(number): false (it needs the index: the file source's
  // TFRecord format seeks with FILE.idx).
  using RecordReader::Seek;

  const std::string& filename() const override;
  // The compression in use (never kAuto).
  Compression compression() const;
  // Records returned so far (or the position after Seek).
  uint64_t next_record_number() const override;
  // Bytes of the read buffers this reader keeps (the current one and up to
  // three spares it recycles), some possibly shared with records it
  // returned: what it holds in memory, for RAM accounting.
  size_t buffer_bytes() const override;

 private:
  struct Impl;
  explicit TFRecordReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_TFRECORD_READER_H_
