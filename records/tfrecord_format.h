// TFRecord framing constants and helpers (see docs/formats.md).
//
// A TFRecord file is a sequence of records, each framed as
//   uint64 length            little-endian
//   uint32 masked_crc32c(length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
// and the whole byte stream is optionally deflated once, as a zlib stream
// (window bits 15) or a gzip stream (15 + 16); a gzip file may hold several
// concatenated members. Pure functions: thread-safe.
#ifndef SLUICE_RECORDS_TFRECORD_FORMAT_H_
#define SLUICE_RECORDS_TFRECORD_FORMAT_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sluice/records/crc32c.h"

namespace sluice::tfrecord {

inline constexpr size_t kLengthSize = 8;
inline constexpr size_t kHeaderSize = 12;  // length + masked CRC of the length
inline constexpr size_t kFooterSize = 4;   // masked CRC of the data
inline constexpr size_t kFramingSize = kHeaderSize + kFooterSize;

// zlib parameters TensorFlow writes with (ZlibCompressionOptions); memLevel 9
// matters: it changes the deflate output bytes.
inline constexpr int kZlibWindowBits = 15;
inline constexpr int kGzipWindowBits = kZlibWindowBits + 16;
inline constexpr int kZlibMemLevel = 9;

inline uint64_t DecodeFixed64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
inline uint32_t DecodeFixed32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}
inline void EncodeFixed64(uint64_t v, uint8_t* p) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline void EncodeFixed32(uint32_t v, uint8_t* p) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}

// Writes the 12-byte header for a record of `length` bytes.
inline void EncodeHeader(uint64_t length, uint8_t out[kHeaderSize]) {
  EncodeFixed64(length, out);
  EncodeFixed32(crc32c::Mask(crc32c::Value(out, kLengthSize)), out + kLengthSize);
}

// True if the 12 bytes at `header` hold a length whose checksum matches.
inline bool HeaderChecksumOk(const uint8_t* header) {
  return crc32c::Mask(crc32c::Value(header, kLengthSize)) == DecodeFixed32(header + kLengthSize);
}

}  // namespace sluice::tfrecord

#endif  // SLUICE_RECORDS_TFRECORD_FORMAT_H_
