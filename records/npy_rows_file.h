// NpyRowsFile: random access to the rows of .npy arrays (an .npy file, or
// members of an .npz with the same first dimension), or to the windows of
// a 1-D token array: records at computable offsets (record_source.h).
//
// Rows: record i is row i along the first axis of every array. With one
// array the record's bytes are the row's bytes as stored, a view into the
// run's read buffer (no copy beyond the read). With several arrays a run is
// read once per array and the rows are laid side by side into one buffer
// (one copy): record i's bytes are then array 0's row, array 1's row, ...,
// each starting at piece_offset(j) (8-byte aligned).
//
// Windows (sequence_length L > 0, one 1-D array of n tokens): record i is
// tokens[i*L, i*L + L + 1), the input and target window of a language
// model; there are (n - 1) / L of them (the last partial window dropped).
// Adjacent windows share one token; a run reads their union once.
//
// Big-endian elements are swapped to little-endian in the read buffer, so
// records always hold little-endian (native) elements of the .npy's own
// element type; NpyValueDType says which sluice dtype holds them.
//
// Reads are preads through core/file.h's ReadableFile into aligned buffers
// (not mmap: a file truncated under an mmap kills the process with SIGBUS,
// and ReadableFile also serves memory files and, later, object stores).
//
// Thread-safety: immutable after Make; const methods may run concurrently.
#ifndef SLUICE_RECORDS_NPY_ROWS_FILE_H_
#define SLUICE_RECORDS_NPY_ROWS_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/records/npy.h"
#include "sluice/records/npz.h"
#include "sluice/records/record_source.h"

namespace sluice {

// One array: its header and where its .npy lies.
struct NpyArray {
  std::string key;  // the .npz member's name; "" for an .npy file
  std::shared_ptr<ReadableFile> file;
  uint64_t base = 0;  // where the .npy starts in `file`
  NpyHeader header;
};

// Reads the header of the .npy at file[base, base + size).
Result<NpyArray> ReadNpyArray(std::shared_ptr<ReadableFile> file, uint64_t base, uint64_t size,
                              std::string key = "");

// The arrays of `path`: an .npy file (one array), or the members of an .npz
// archive (by its magic, not its name) named in `keys` (all if empty), in
// `keys`' order (directory order if empty). NotFound for a key the archive
// lacks, naming the keys it has.
Result<std::vector<NpyArray>> OpenNpyArrays(const std::string& path,
                                            const std::vector<std::string>& keys = {},
                                            uint64_t max_inflated_bytes = kDefaultMaxInflatedBytes);

class NpyRowsFile final : public IndexedRecordFile {
 public:
  // InvalidArgument (naming `path`): no arrays, a 0-d array, first
  // dimensions that differ, or windows over anything but one 1-D array.
  static Result<std::shared_ptr<const NpyRowsFile>> Make(std::string path,
                                                         std::vector<NpyArray> arrays,
                                                         int64_t sequence_length = 0);

  uint64_t num_records() const override { return num_records_; }
  const std::string& path() const override { return path_; }
  RecordExtent extent(uint64_t i) const override;
  Result<std::vector<Record>> ReadRun(uint64_t first, size_t max_bytes,
                                      uint64_t stride = 1) const override;

  const std::vector<NpyArray>& arrays() const { return arrays_; }
  // Where array j's row lies in a record's bytes, and how long it is.
  size_t piece_offset(size_t j) const { return piece_offsets_[j]; }
  size_t piece_bytes(size_t j) const { return piece_bytes_[j]; }
  // Bytes of one record.
  size_t record_bytes() const { return record_bytes_; }
  int64_t sequence_length() const { return sequence_length_; }

 private:
  NpyRowsFile() = default;
  Result<std::vector<Record>> ReadSingle(uint64_t first, uint64_t last, uint64_t stride) const;
  Result<std::vector<Record>> ReadComposite(uint64_t first, uint64_t last, uint64_t stride) const;
  Status ReadArrayRun(size_t j, uint64_t first, uint64_t count, uint8_t* dst) const;

  std::string path_;
  std::vector<NpyArray> arrays_;
  int64_t sequence_length_ = 0;
  uint64_t num_records_ = 0;
  size_t record_bytes_ = 0;
  uint64_t step_bytes_ = 0;  // from record i to i + 1 in array 0 (single-array mode)
  std::vector<size_t> piece_offsets_;
  std::vector<size_t> piece_bytes_;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_NPY_ROWS_FILE_H_
