// Constants and small encoders of the LevelDB table ("SSTable") format that
// TensorFlow uses for a checkpoint's `.index` file (docs/formats.md,
// "Tensor bundle checkpoints"). Pure functions: thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_SSTABLE_FORMAT_H_
#define SLUICE_RECORDS_INTERNAL_SSTABLE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::sstable {

// The last 8 bytes of every table, stored little-endian.
inline constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
// A block handle is two varint64s: at most 10 bytes each.
inline constexpr size_t kMaxBlockHandleSize = 20;
// Footer: metaindex handle, index handle, zero padding to 40 bytes, magic.
inline constexpr size_t kFooterSize = 2 * kMaxBlockHandleSize + 8;
// After each block: one compression-type byte and a masked CRC32C of the
// block's bytes followed by that type byte.
inline constexpr size_t kBlockTrailerSize = 5;
inline constexpr uint8_t kNoCompression = 0;
inline constexpr uint8_t kSnappyCompression = 1;  // read as unsupported

// TensorFlow's table defaults (tensorflow/core/lib/io/table_options.h).
inline constexpr size_t kDefaultBlockSize = 262144;
inline constexpr int kDefaultRestartInterval = 16;

inline void PutFixed32(std::string* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void PutVarint64(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}
inline uint32_t LoadFixed32(const char* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return uint32_t{u[0]} | (uint32_t{u[1]} << 8) | (uint32_t{u[2]} << 16) | (uint32_t{u[3]} << 24);
}
inline uint64_t LoadFixed64(const char* p) {
  return uint64_t{LoadFixed32(p)} | (uint64_t{LoadFixed32(p + 4)} << 32);
}
// Reads a varint64 from the front of `*in`, advancing it. False if `*in`
// ends first or the varint is longer than 10 bytes or overflows.
inline bool GetVarint64(std::string_view* in, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0, i = 0; i < 10 && static_cast<size_t>(i) < in->size(); ++i, shift += 7) {
    const uint8_t byte = static_cast<uint8_t>((*in)[i]);
    if (i == 9 && byte > 1) return false;
    result |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *value = result;
      return true;
    }
  }
  return false;
}
inline bool GetVarint32(std::string_view* in, uint32_t* value) {
  uint64_t v;
  std::string_view copy = *in;
  if (!GetVarint64(&copy, &v) || v > 0xffffffffu || in->size() - copy.size() > 5) return false;
  *in = copy;
  *value = static_cast<uint32_t>(v);
  return true;
}

// Where a block lies in the table; size excludes the 5-byte trailer.
struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};
inline void PutBlockHandle(std::string* dst, const BlockHandle& h) {
  PutVarint64(dst, h.offset);
  PutVarint64(dst, h.size);
}
inline bool GetBlockHandle(std::string_view* in, BlockHandle* h) {
  return GetVarint64(in, &h->offset) && GetVarint64(in, &h->size);
}

}  // namespace sluice::sstable

#endif  // SLUICE_RECORDS_INTERNAL_SSTABLE_FORMAT_H_
