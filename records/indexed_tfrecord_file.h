// IndexedTFRecordFile: random access to the records of an uncompressed
// TFRecord file through its record index (record_index.h), for a global
// shuffle or record-level sharding.
//
// Read(i) costs one pread() of record i's framed bytes (header, payload and
// footer) into a buffer of its own, then checks the header's length against
// the index and both CRCs (the data CRC unless verify_checksums is off). A
// record that does not match its index entry, a checksum mismatch and a
// record cut short are all DataLoss naming the file, the record number and
// its byte offset: an index that lies is reported, never trusted. Lengths
// are checked against the file size and max_record_size before allocating.
// Compressed files cannot be read at random (InvalidArgument): convert them,
// or read them in order with TFRecordReader.
//
// Ownership: the object shares the open file and the index among its
// copies (copying is a reference-count increment); the file closes when the
// last copy goes away. A returned Record owns its bytes (Record::owner) and
// outlives the IndexedTFRecordFile that made it.
//
// Thread-safety: immutable after Open; every const method, Read() included,
// may be called from several threads at once.
#ifndef SLUICE_RECORDS_INDEXED_TFRECORD_FILE_H_
#define SLUICE_RECORDS_INDEXED_TFRECORD_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/buffer.h"
#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/record_index.h"
#include "sluice/records/record_source.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice {

struct IndexedTFRecordFileOptions {
  // Check each record's data CRC. The header CRC (which guards the length)
  // is always checked.
  bool verify_checksums = true;
  // Records whose payload is longer than this are DataLoss.
  uint64_t max_record_size = uint64_t{1} << 32;
};

class IndexedTFRecordFile : public IndexedRecordFile {
 public:
  // Opens `path` and its index, `path`.idx (RecordIndex::LoadFor).
  // InvalidArgument if the file is compressed; NotFound if the file or its
  // index does not exist; FailedPrecondition if the index is stale (does not
  // end at the file's size); DataLoss if the index is malformed.
  static Result<IndexedTFRecordFile> Open(const std::string& path,
                                          const IndexedTFRecordFileOptions& options = {});
  // Opens `path` with an index already loaded or built for it. As above;
  // FailedPrecondition if `index` does not end exactly at the file's size.
  static Result<IndexedTFRecordFile> Open(const std::string& path, RecordIndex index,
                                          const IndexedTFRecordFileOptions& options = {});
  // As above, reading through `file` (a memory file in tests, say).
  static Result<IndexedTFRecordFile> Open(std::unique_ptr<ReadableFile> file, RecordIndex index,
                                          const IndexedTFRecordFileOptions& options = {});

  // Copies share the file and the index. A moved-from object may only be
  // destroyed or assigned to.
  IndexedTFRecordFile(const IndexedTFRecordFile&);
  IndexedTFRecordFile& operator=(const IndexedTFRecordFile&);
  IndexedTFRecordFile(IndexedTFRecordFile&&) noexcept;
  IndexedTFRecordFile& operator=(IndexedTFRecordFile&&) noexcept;
  ~IndexedTFRecordFile() override;

  uint64_t num_records() const override;
  // The path (or the ReadableFile's name), as used in error messages.
  const std::string& path() const override;
  const RecordIndex& index() const;
  // Record i's header offset and framed length. REQUIRES: i < num_records().
  RecordExtent extent(uint64_t i) const override;

  // Record `i`, with Record::number == i and Record::offset its header's
  // byte offset. OutOfRange if i >= num_records(); DataLoss (naming file,
  // record and offset) if the stored bytes do not match the index or their
  // checksums, or the file now ends before the record does.
  Result<Record> Read(uint64_t i) const override;
  // As Read(i), reading into `*scratch` when it is large enough and not
  // shared (Buffer::unique()); otherwise a new buffer is allocated and stored
  // in `*scratch`. The Record shares `*scratch`: drop it before the next call
  // to let that call reuse the bytes. REQUIRES: scratch != nullptr.
  Result<Record> Read(uint64_t i, Buffer* scratch) const;
  // Records first, first + 1, ... read with one pread: the longest run of
  // adjacent records whose framed bytes fit in `max_bytes` (at least one).
  // Each Record views one shared buffer. Errors as Read(first); a later
  // record's corruption is its own DataLoss (naming it).
  // With stride k > 1 the same bytes are read, but only records first,
  // first + k, first + 2k, ... of the run are checked and returned (a reader
  // that takes every k-th record pays for one read, not for the others).
  Result<std::vector<Record>> ReadRun(uint64_t first, size_t max_bytes,
                                      uint64_t stride = 1) const override;

 private:
  Status CheckEntry(uint64_t i) const;
  Result<Record> CheckFramed(uint64_t i, const uint8_t* bytes, const Buffer& owner) const;
  struct Impl;
  explicit IndexedTFRecordFile(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_INDEXED_TFRECORD_FILE_H_
