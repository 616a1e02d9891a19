// A minimal protobuf wire-format reader and writer for the Example parser and
// builder: tags, varints, length prefixes, fixed32 values and skipping of
// unknown fields (groups included).
//
// The reader accepts exactly what protobuf's C++ parser (3.21) accepts:
//   - tags are varints of at most 5 bytes whose value is kept modulo 2^32;
//     field number 0 and wire types 6 and 7 are errors;
//   - other varints have at most 10 bytes, value modulo 2^64 (overlong
//     encodings such as 0x80 0x00 for 0 are fine);
//   - length prefixes have at most 5 bytes, the fifth below 8, and a value of
//     at most 2^31 - 17;
//   - nothing may cross the end of the enclosing message;
//   - groups nest, end with the matching end-group tag, and share one budget
//     with nested messages: kRecursionLimit levels, counted down as protobuf
//     counts them.
// Every read is bounds-checked against `end` before a byte is touched, so no
// length or count is trusted before it is checked against what remains.
//
// Failures are reported as a WireError (where and why); callers turn it into
// a DataLoss status. Pure functions on caller memory: thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_WIRE_H_
#define SLUICE_RECORDS_INTERNAL_WIRE_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace sluice::records_internal {

inline constexpr uint32_t kWireVarint = 0;
inline constexpr uint32_t kWireFixed64 = 1;
inline constexpr uint32_t kWireLengthDelimited = 2;
inline constexpr uint32_t kWireStartGroup = 3;
inline constexpr uint32_t kWireEndGroup = 4;
inline constexpr uint32_t kWireFixed32 = 5;

constexpr uint32_t MakeTag(uint32_t field, uint32_t wire_type) { return field << 3 | wire_type; }

// Protobuf's default recursion budget: the top-level message starts with
// it, each nested message and each group uses one level.
inline constexpr int kRecursionLimit = 100;

// Largest length prefix protobuf accepts (INT32_MAX minus its 16 slop bytes).
inline constexpr uint32_t kMaxLength = 0x7fffffffu - 16;

enum class WireErrorCode : uint8_t {
  kNone,
  kTruncatedTag,
  kTagTooLong,
  kFieldNumberZero,
  kBadWireType,
  kStrayEndGroup,
  kMismatchedEndGroup,
  kUnterminatedGroup,
  kTooDeep,
  kTruncatedVarint,
  kVarintTooLong,
  kBadLength,
  kLengthPastEnd,
  kTruncatedFixed,
  kPackedFloatSize,
  kBadUtf8Key,
};

// Why and where the wire format is malformed.
struct WireError {
  WireErrorCode code = WireErrorCode::kNone;
  const uint8_t* at = nullptr;  // the first byte of the offending item
  uint64_t a = 0, b = 0;        // details: a wire type, a length, ...
};

// "truncated varint", "length 40 runs past the end of the enclosing message
// (12 bytes left)", ...
std::string DescribeWireError(const WireError& e);

// Sets *err (if not yet set) and returns false, for `return Fail(...)`.
inline bool Fail(WireError* err, WireErrorCode code, const uint8_t* at, uint64_t a = 0,
                 uint64_t b = 0) {
  if (err->code == WireErrorCode::kNone) *err = WireError{code, at, a, b};
  return false;
}

// Reads a tag at p (advancing p). Does not check the field number or wire
// type; see CheckTag.
bool ReadTagSlow(const uint8_t*& p, const uint8_t* end, uint32_t* tag, WireError* err);
inline bool ReadTag(const uint8_t*& p, const uint8_t* end, uint32_t* tag, WireError* err) {
  if (p < end && *p < 0x80) [[likely]] {
    *tag = *p++;
    return true;
  }
  return ReadTagSlow(p, end, tag, err);
}

bool ReadVarintSlow(const uint8_t*& p, const uint8_t* end, uint64_t* value, WireError* err);
inline bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* value, WireError* err) {
  if (p < end && *p < 0x80) [[likely]] {
    *value = *p++;
    return true;
  }
  return ReadVarintSlow(p, end, value, err);
}

// Reads a length prefix and checks that `*len` bytes remain before `end`.
bool ReadLengthSlow(const uint8_t*& p, const uint8_t* end, uint32_t* len, WireError* err);
inline bool ReadLength(const uint8_t*& p, const uint8_t* end, uint32_t* len, WireError* err) {
  if (p < end && *p < 0x80) [[likely]] {
    const uint32_t n = *p;
    if (n <= static_cast<size_t>(end - p - 1)) [[likely]] {
      *len = n;
      ++p;
      return true;
    }
  }
  return ReadLengthSlow(p, end, len, err);
}

// Skips the value of a field whose tag (already read, starting at tag_at)
// is not one the caller handles. `depth` is the recursion budget left in the
// enclosing message. An end-group tag, field number 0 and wire types 6/7
// are errors here: callers that parse a group body check for end-group
// first.
bool SkipField(uint32_t tag, const uint8_t* tag_at, const uint8_t*& p, const uint8_t* end,
               int depth, WireError* err);

// Counts the varints in a packed run [p, end) and checks that each has at
// most 10 bytes and that the last one ends exactly at `end`.
bool CountPackedVarints(const uint8_t* p, const uint8_t* end, uint64_t* count, WireError* err);

// Decodes a run of varints known to be well formed (CountPackedVarints
// succeeded on it) into out[0, count). Returns the number decoded.
size_t DecodePackedVarints(const uint8_t* p, const uint8_t* end, int64_t* out);

// Protobuf's UTF-8 check for string fields (map keys): well-formed UTF-8
// without surrogates, overlong forms or values past U+10FFFF.
bool IsValidUtf8(const uint8_t* p, size_t n);

inline uint32_t LoadLittleEndian32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

// --- Writing ---------------------------------------------------------------

// Bytes a varint of `v` takes (1..10).
inline size_t VarintSize(uint64_t v) {
  // 1 + floor(bit_width / 7), with 0 taking one byte.
  return static_cast<size_t>((std::bit_width(v | 1) + 6) / 7);
}

// Writes `v` as a varint at p and returns the end.
inline uint8_t* WriteVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline void AppendVarint(std::string* out, uint64_t v) {
  uint8_t buf[10];
  const uint8_t* end = WriteVarint(buf, v);
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
}

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_WIRE_H_
