// IdxFile: an array in the IDX format of the MNIST and Fashion-MNIST
// distributions, as read by `sluice convert idx`.
//
//   offset 0  2 bytes   zero
//   offset 2  1 byte    element type: 0x08 unsigned byte (the only one read)
//   offset 3  1 byte    number of dimensions, d
//   offset 4  4*d bytes each dimension, big-endian uint32
//   then the elements, row-major: the product of the dimensions, exactly
//
// Images are magic 0x00000803 (uint8 [n, rows, cols]), labels 0x00000801
// (uint8 [n]). A file whose first two bytes are 1f 8b is gzip-compressed
// (the distributed *-ubyte.gz) and is inflated with zlib.
//
// Hostile headers are rejected before anything large is allocated: the
// claimed size must be the file's size exactly (for gzip, it must also fit
// what deflate can expand the file to, 1032:1), every dimension of an image
// must be at least 1 and rows x cols at most 2^24. Errors name the file and
// the byte offset (for gzip, in the inflated stream).
//
// A value; ReadIdxFile is thread-safe.
#ifndef SLUICE_TOOLS_IDX_FILE_H_
#define SLUICE_TOOLS_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"

namespace sluice::tools {

struct IdxArray {
  std::vector<int64_t> dims;
  std::string data;  // the uint8 elements, row-major
  int64_t count() const { return dims.empty() ? 0 : dims[0]; }
};

// Parses IDX bytes (already inflated), expecting `rank` dimensions;
// `name` is used in errors.
Result<IdxArray> ParseIdx(std::string_view bytes, int rank, const std::string& name);

// Reads and parses `path` (gzip-compressed or not). `rank` is 3 for images,
// 1 for labels.
Result<IdxArray> ReadIdxFile(const std::string& path, int rank);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_IDX_FILE_H_
