// TarReader: the WebDataset samples of one POSIX tar file, read in order.
//
// Members (regular files) are grouped as the webdataset library groups
// them: a member's key is its path up to the first dot of its base name
// (folders kept: "train/0001.seg.png" has key "train/0001" and extension
// "seg.png"), and consecutive members with the same key form one sample.
// Folders, links, devices, pax global headers and webdataset's metadata
// names ("__x__") are skipped. ustar, pax ('x': path and size) and GNU
// long names ('L') are read; uncompressed, gzip and zlib files (detected
// from the first bytes unless told).
//
// A sample is a Record whose `data` spans its members' headers and padded
// payloads in the read buffer (Record::offset is its first header's, in the
// uncompressed stream); ForEachTarMember walks those bytes to the members,
// whose payloads are views into the same buffer (no copy).
//
// Errors name the file and the byte offset of the header at fault:
//  - a header whose checksum fails, a malformed number or pax record, a pax
//    or long-name payload over max_header_size, a member that runs past the
//    end of the file (checked before anything is allocated), a file cut
//    short: DataLoss, and the reader stays (Next() repeats the error); the
//    sample before a bad header is returned first, ending there;
//  - a member name without a key (".jpg"), a sample over max_sample_size,
//    an extension twice in one sample: DataLoss, after which Next() goes on
//    with the following sample (next_record_number() grew).
// Unlike webdataset, which silently drops names without a key, they are
// errors here (ignore_errors skips them).
//
// Not thread-safe: use one reader per thread. Records it returned may be
// used on any thread.
#ifndef SLUICE_RECORDS_TAR_READER_H_
#define SLUICE_RECORDS_TAR_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/compression.h"
#include "sluice/records/record_source.h"

namespace sluice {

struct TarReaderOptions {
  // kAuto detects gzip / zlib from the first bytes.
  Compression compression = Compression::kAuto;
  // Bytes per read (and of inflated stream). A larger sample gets a buffer
  // of its own size.
  size_t buffer_size = size_t{1} << 20;
  // Samples (headers and padded payloads) larger than this are DataLoss,
  // before anything is allocated for them.
  uint64_t max_sample_size = uint64_t{1} << 30;
  // Pax extended headers and GNU long names larger than this are DataLoss.
  uint64_t max_header_size = uint64_t{1} << 20;
  // Seek() with the file's index (TarIndexPath) when it has a valid one.
  bool seek_with_index = true;
};

// The compression of a tar file from its first bytes: kNone when they are a
// tar header (or the file is empty), else gzip or zlib by their magic, else
// kNone (reading then reports what is wrong at offset 0).
Result<Compression> DetectTarCompression(ReadableFile& file);

// One member of a sample. Views into the sample's bytes, valid while the
// Record's owner lives (`key` and `name` only during the callback).
struct TarMember {
  std::string_view name;       // the member's path
  std::string_view key;        // name up to the first dot of its base name
  std::string_view extension;  // the rest, as stored (not lower-cased)
  std::string_view data;       // the payload
  uint64_t offset = 0;         // of the member's first header
};

// Calls `fn` for each member of the sample whose bytes are `sample` (a
// Record's data, at stream offset `offset` of `filename`), in order. Checks
// every header again, that the members share one key and that no
// extension appears twice (compared lower-cased, as webdataset does): DataLoss
// naming the file and offset otherwise, or fn's error.
Status ForEachTarMember(std::string_view sample, uint64_t offset, const std::string& filename,
                        uint64_t max_header_size,
                        const std::function<Status(const TarMember&)>& fn);

class TarReader : public RecordReader {
 public:
  static Result<std::unique_ptr<TarReader>> Open(const std::string& path,
                                                 const TarReaderOptions& options = {});
  static Result<std::unique_ptr<TarReader>> Open(std::unique_ptr<ReadableFile> file,
                                                 const TarReaderOptions& options = {});
  ~TarReader() override;

  Result<std::optional<Record>> Next() override;
  uint64_t next_record_number() const override;
  // With the file's index (tar_index.h; loaded at the first call) and
  // seek_with_index: true, and Next() returns sample `number`. False
  // without a valid index.
  // OutOfRange past the last sample.
  Result<bool> Seek(uint64_t number) override;
  size_t buffer_bytes() const override;
  const std::string& filename() const override;

  // The compression in use (never kAuto).
  Compression compression() const;
  // Stream offset where the next sample starts (after the last one: where
  // the archive's end marker or the file's end is).
  uint64_t position() const;

 private:
  struct Impl;
  explicit TarReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_TAR_READER_H_
