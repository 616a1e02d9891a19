// RecordIndex: where each record of a TFRecord file starts, and how long it
// is, so readers can count records exactly and seek to record N.
//
// Stored beside the file as FILE.idx, in the plain-text format of NVIDIA
// DALI's tfrecord2idx and the python `tfrecord` package: one line per record,
// "<offset> <length>", where length is the whole framed record (payload plus
// 16 bytes of framing). Indexes written by those tools load here and vice
// versa. For a compressed file the offsets are positions in the uncompressed
// stream (those tools read uncompressed files only).
//
// Immutable once built or loaded; const methods are thread-safe.
#ifndef SLUICE_RECORDS_RECORD_INDEX_H_
#define SLUICE_RECORDS_RECORD_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/records/tfrecord_reader.h"

namespace sluice {

struct RecordIndexEntry {
  uint64_t offset = 0;  // of the record's header in the (uncompressed) stream
  uint64_t length = 0;  // framed bytes: payload + 16
  uint64_t payload_length() const { return length - 16; }
  friend bool operator==(const RecordIndexEntry&, const RecordIndexEntry&) = default;
};

class RecordIndex {
 public:
  RecordIndex() = default;
  // REQUIRES: entries are contiguous from offset 0, each length >= 16
  // (Parse() and Build() guarantee it).
  explicit RecordIndex(std::vector<RecordIndexEntry> entries);

  // Reads every record of `tfrecord_path` (checking CRCs as `options` say)
  // and indexes it.
  static Result<RecordIndex> Build(const std::string& tfrecord_path,
                                   const TFRecordReaderOptions& options = {});
  // Parses index text. DataLoss naming `name` and the line for malformed or
  // inconsistent lines (entries must be contiguous from 0).
  static Result<RecordIndex> Parse(std::string_view text, const std::string& name);
  // Loads an index file (NotFound if absent).
  static Result<RecordIndex> Load(const std::string& idx_path);
  // Loads `tfrecord_path`.idx and checks that it matches the data file:
  // for an uncompressed file it must end exactly at the file size; for a
  // compressed one it must not be older than the file. NotFound if there is
  // no index; FailedPrecondition if it is stale.
  static Result<RecordIndex> LoadFor(const std::string& tfrecord_path);

  // "<path>.idx"
  static std::string PathFor(const std::string& tfrecord_path);

  // The index text ("offset length\n" per record).
  std::string ToText() const;
  // Writes ToText() to `idx_path` under a temporary name, renamed on success.
  // With `sync`, the file and then its folder are fsynced (power-loss safe).
  Status Save(const std::string& idx_path, bool sync = false) const;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const RecordIndexEntry& operator[](size_t i) const { return entries_[i]; }
  const std::vector<RecordIndexEntry>& entries() const { return entries_; }
  // Bytes of stream the index covers: where the record after the last would start.
  uint64_t stream_size() const;

 private:
  std::vector<RecordIndexEntry> entries_;
};

// The number of records in a TFRecord file: from its .idx when one exists
// and matches the file, else by reading it (checking CRCs).
Result<uint64_t> CountRecords(const std::string& tfrecord_path,
                              const TFRecordReaderOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_RECORDS_RECORD_INDEX_H_
