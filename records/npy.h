// The .npy format: NumPy's file of one array (docs/formats.md, "NumPy").
//
// An .npy file is the magic "\x93NUMPY", a version (1.0, 2.0 or 3.0), the
// header's length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0),
// the header (a Python dict literal with 'descr', 'fortran_order' and
// 'shape', padded with spaces and a newline), then the elements in C order.
//
// ParseNpyHeader accepts what NumPy writes and refuses, with an error naming
// the file and the byte offset:
//  - malformed or truncated headers, a header length past the file, a shape
//    whose byte size overflows or does not fit in the file: DataLoss;
//  - what sluice cannot read: fortran_order True, object and structured
//    dtypes, and element types with no sluice dtype (complex, uint64,
//    strings, dates): InvalidArgument.
// Nothing is allocated from a length before it is checked against the file
// and kMaxNpyHeaderBytes.
//
// Thread-safety: free functions over values; ReadNpyHeader reads through a
// ReadableFile, which allows concurrent reads.
#ifndef SLUICE_RECORDS_NPY_H_
#define SLUICE_RECORDS_NPY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/dtype.h"
#include "sluice/core/file.h"
#include "sluice/core/result.h"

namespace sluice {

inline constexpr std::string_view kNpyMagic = "\x93NUMPY";
// Longest header accepted (NumPy reads 10000 bytes unless told otherwise).
inline constexpr uint64_t kMaxNpyHeaderBytes = uint64_t{1} << 20;
// Largest rank accepted (NumPy's own limit).
inline constexpr size_t kMaxNpyRank = 64;

// An element type as an .npy descr gives it ("<f4": kind 'f', 4 bytes,
// little-endian).
struct NpyDType {
  char kind = 0;  // 'b' bool, 'i' signed int, 'u' unsigned int, 'f' float
  int size = 0;   // bytes per element
  bool big_endian = false;
};

struct NpyHeader {
  int major_version = 1;
  int minor_version = 0;
  std::string descr;  // as written, "<f4"
  NpyDType dtype;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // of the first element, from the start of the .npy
  uint64_t data_bytes = 0;   // every element's bytes
};

// Parses the header at the start of `head`, the first bytes of an .npy of
// `size` bytes in all (`head` may be shorter than the file but must hold
// the whole header to succeed), named `name` in errors. `base` is where the
// .npy starts in its file (an .npz member's offset), for error offsets.
Result<NpyHeader> ParseNpyHeader(std::string_view head, uint64_t size, const std::string& name,
                                 uint64_t base = 0);

// Reads and parses the header of the .npy stored at file[base, base + size).
Result<NpyHeader> ReadNpyHeader(ReadableFile& file, uint64_t base, uint64_t size);

// The sluice dtype an element type's values are given as: the same type
// (bool, uint8, int32, int64, float16, float32, float64), or, for integer
// types sluice has no dtype of, a wider one that holds every value (int8,
// int16, uint16 -> int32; uint32 -> int64): *widened is then true.
// InvalidArgument for anything else. REQUIRES: widened != nullptr.
Result<DType> NpyValueDType(const NpyDType& dtype, bool* widened);

}  // namespace sluice

#endif  // SLUICE_RECORDS_NPY_H_
