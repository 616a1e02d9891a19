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
// Indexes sluice writes end with one more line, a comment the other tools
// skip (DALI stops at it, numpy.loadtxt ignores it):
//   # sluice-index data-bytes=<size of the data file> data-crc32c=<8 hex digits>
// naming the data file it was made for (its size and the CRC-32C of its
// bytes as stored, compressed bytes for a compressed file), so that an
// index left from another version of the file is detected for every
// compression (docs/formats.md, "Record index").
//
// Immutable once built or loaded; const methods are thread-safe.
#ifndef SLUICE_RECORDS_RECORD_INDEX_H_
#define SLUICE_RECORDS_RECORD_INDEX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// The data file an index was made for: the trailer line above.
struct RecordIndexData {
  uint64_t bytes = 0;   // the file's size
  uint32_t crc32c = 0;  // CRC-32C of its bytes as stored
  friend bool operator==(const RecordIndexData&, const RecordIndexData&) = default;
};

// The size and CRC-32C of the file at `path`, read through in pieces.
Result<RecordIndexData> DigestDataFile(const std::string& path);

class RecordIndex {
 public:
  RecordIndex() = default;
  // REQUIRES: entries are contiguous from offset 0, each length >= 16
  // (Parse() and Build() guarantee it).
  explicit RecordIndex(std::vector<RecordIndexEntry> entries,
                       std::optional<RecordIndexData> data = std::nullopt);

  // Reads every record of `tfrecord_path` (checking CRCs as `options` say;
  // no record is held in memory) and indexes it, with the file's digest.
  static Result<RecordIndex> Build(const std::string& tfrecord_path,
                                   const TFRecordReaderOptions& options = {});
  // Parses index text. DataLoss naming `name` and the line for malformed or
  // inconsistent lines (entries must be contiguous from 0). Lines starting
  // with '#' are comments, but for the trailer, which must be well formed.
  static Result<RecordIndex> Parse(std::string_view text, const std::string& name);
  // Loads an index file (NotFound if absent).
  static Result<RecordIndex> Load(const std::string& idx_path);
  // Loads `tfrecord_path`.idx and checks, cheaply, that it matches the data
  // file: the size its trailer names must be the file's, an uncompressed
  // file's index must end exactly at the file size, and a compressed file's
  // index must have a trailer (without one nothing ties it to this version
  // of the file). NotFound if there is no index; FailedPrecondition naming
  // the reason if it is stale. Readers then check each record they read at
  // an index offset against its entry.
  static Result<RecordIndex> LoadFor(const std::string& tfrecord_path);
  // The thorough check, for callers that trust the index instead of reading
  // the records (`sluice count`): for an uncompressed file every entry's
  // record header is read and must hold the entry's length with a valid
  // checksum (one small read per record, none of the payloads); for a
  // compressed file the file's CRC-32C must be the trailer's. FailedPrecondition
  // naming the first mismatch. REQUIRES: LoadFor() accepted the index.
  Status CheckAgainst(const std::string& tfrecord_path) const;

  // "<path>.idx"
  static std::string PathFor(const std::string& tfrecord_path);

  // The index text ("offset length\n" per record, then the trailer if the
  // data file is known).
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
  // The data file it was made for, if its trailer says (indexes of other
  // tools have none).
  const std::optional<RecordIndexData>& data() const { return data_; }

 private:
  std::vector<RecordIndexEntry> entries_;
  std::optional<RecordIndexData> data_;
};

// How CountRecordsOf counted.
struct RecordCount {
  uint64_t records = 0;
  bool from_index = false;  // FILE.idx, checked with CheckAgainst()
  // Why an index that exists was not used (OK when there is none, or it was).
  Status index_status;
};

// The number of records in a TFRecord file: from its .idx when one exists
// and passes RecordIndex::CheckAgainst, else by reading it with NextFrame()
// (checking CRCs as `options` say, holding no record in memory).
Result<RecordCount> CountRecordsOf(const std::string& tfrecord_path,
                                   const TFRecordReaderOptions& options = {});
// CountRecordsOf(...).records.
Result<uint64_t> CountRecords(const std::string& tfrecord_path,
                              const TFRecordReaderOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_RECORDS_RECORD_INDEX_H_
