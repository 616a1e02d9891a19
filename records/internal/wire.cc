#include "sluice/records/internal/wire.h"

namespace sluice::records_internal {
namespace {

bool SkipGroup(uint32_t field, const uint8_t* start_at, const uint8_t*& p, const uint8_t* end,
               int depth, WireError* err) {
  // Protobuf spends one level of its budget on each group.
  if (--depth < 0) return Fail(err, WireErrorCode::kTooDeep, start_at, kRecursionLimit);
  while (true) {
    if (p >= end) return Fail(err, WireErrorCode::kUnterminatedGroup, start_at, field);
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, err)) return false;
    if ((tag & 7) == kWireEndGroup) {
      if ((tag >> 3) == field) return true;
      return Fail(err, WireErrorCode::kMismatchedEndGroup, at, tag >> 3, field);
    }
    if (!SkipField(tag, at, p, end, depth, err)) return false;
  }
}

}  // namespace

std::string DescribeWireError(const WireError& e) {
  const std::string a = std::to_string(e.a), b = std::to_string(e.b);
  switch (e.code) {
    case WireErrorCode::kNone: return "no error";
    case WireErrorCode::kTruncatedTag: return "truncated field tag";
    case WireErrorCode::kTagTooLong: return "field tag longer than 5 bytes";
    case WireErrorCode::kFieldNumberZero: return "field number 0";
    case WireErrorCode::kBadWireType: return "invalid wire type " + a;
    case WireErrorCode::kStrayEndGroup: return "end-group tag for field " + a + " outside a group";
    case WireErrorCode::kMismatchedEndGroup:
      return "end-group tag for field " + a + " closes a group of field " + b;
    case WireErrorCode::kUnterminatedGroup:
      return "group of field " + a + " not closed before the end of its message";
    case WireErrorCode::kTooDeep: return "messages and groups nested deeper than " + a + " levels";
    case WireErrorCode::kTruncatedVarint: return "truncated varint";
    case WireErrorCode::kVarintTooLong: return "varint longer than 10 bytes";
    case WireErrorCode::kBadLength:
      return "invalid length prefix (more than 5 bytes or 2 GiB or more)";
    case WireErrorCode::kLengthPastEnd:
      return "length " + a + " runs past the end of the enclosing message (" + b + " bytes left)";
    case WireErrorCode::kTruncatedFixed: return "truncated " + a + "-byte fixed-width value";
    case WireErrorCode::kPackedFloatSize:
      return "packed float_list of " + a + " bytes is not a multiple of 4";
    case WireErrorCode::kBadUtf8Key: return "feature key is not valid UTF-8";
  }
  return "unknown error";
}

bool ReadTagSlow(const uint8_t*& p, const uint8_t* end, uint32_t* tag, WireError* err) {
  uint32_t v = 0;
  for (int i = 0; i < 5; ++i) {
    if (p + i >= end) return Fail(err, WireErrorCode::kTruncatedTag, p);
    const uint32_t byte = p[i];
    v |= (byte & 0x7f) << (7 * i);  // the fifth byte's high bits fall off, as in protobuf
    if (byte < 0x80) {
      p += i + 1;
      *tag = v;
      return true;
    }
  }
  return Fail(err, WireErrorCode::kTagTooLong, p);
}

bool ReadVarintSlow(const uint8_t*& p, const uint8_t* end, uint64_t* value, WireError* err) {
  uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (p + i >= end) return Fail(err, WireErrorCode::kTruncatedVarint, p);
    const uint64_t byte = p[i];
    v |= (byte & 0x7f) << (7 * i);
    if (byte < 0x80) {
      p += i + 1;
      *value = v;
      return true;
    }
  }
  return Fail(err, WireErrorCode::kVarintTooLong, p);
}

bool ReadLengthSlow(const uint8_t*& p, const uint8_t* end, uint32_t* len, WireError* err) {
  uint32_t v = 0;
  int i = 0;
  for (;; ++i) {
    if (p + i >= end) return Fail(err, WireErrorCode::kTruncatedVarint, p);
    const uint32_t byte = p[i];
    if (i == 4) {
      if (byte >= 8) return Fail(err, WireErrorCode::kBadLength, p);
      v |= byte << 28;
      break;
    }
    v |= (byte & 0x7f) << (7 * i);
    if (byte < 0x80) break;
  }
  if (v > kMaxLength) return Fail(err, WireErrorCode::kBadLength, p);
  const uint8_t* body = p + i + 1;
  if (v > static_cast<size_t>(end - body)) {
    return Fail(err, WireErrorCode::kLengthPastEnd, p, v, static_cast<uint64_t>(end - body));
  }
  p = body;
  *len = v;
  return true;
}

bool SkipField(uint32_t tag, const uint8_t* tag_at, const uint8_t*& p, const uint8_t* end,
               int depth, WireError* err) {
  const uint32_t field = tag >> 3;
  const uint32_t wire_type = tag & 7;
  if (field == 0) return Fail(err, WireErrorCode::kFieldNumberZero, tag_at);
  switch (wire_type) {
    case kWireVarint: {
      uint64_t ignored;
      return ReadVarint(p, end, &ignored, err);
    }
    case kWireFixed64:
      if (end - p < 8) return Fail(err, WireErrorCode::kTruncatedFixed, p, 8);
      p += 8;
      return true;
    case kWireLengthDelimited: {
      uint32_t len;
      if (!ReadLength(p, end, &len, err)) return false;
      p += len;
      return true;
    }
    case kWireStartGroup: return SkipGroup(field, tag_at, p, end, depth, err);
    case kWireEndGroup: return Fail(err, WireErrorCode::kStrayEndGroup, tag_at, field);
    case kWireFixed32:
      if (end - p < 4) return Fail(err, WireErrorCode::kTruncatedFixed, p, 4);
      p += 4;
      return true;
    default: return Fail(err, WireErrorCode::kBadWireType, tag_at, wire_type);
  }
}

bool CountPackedVarints(const uint8_t* p, const uint8_t* end, uint64_t* count, WireError* err) {
  constexpr uint64_t kHighBits = 0x8080808080808080ull;
  uint64_t n = 0;
  int run = 0;  // continuation bytes seen in the current varint
  const uint8_t* varint_start = p;
  while (p < end) {
    if (run == 0 && end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & kHighBits) == 0) {  // eight one-byte varints
        n += 8;
        p += 8;
        continue;
      }
    }
    if (*p & 0x80) {
      if (run == 0) varint_start = p;
      if (++run == 10) return Fail(err, WireErrorCode::kVarintTooLong, varint_start);
    } else {
      run = 0;
      ++n;
    }
    ++p;
  }
  if (run != 0) return Fail(err, WireErrorCode::kTruncatedVarint, varint_start);
  *count = n;
  return true;
}

size_t DecodePackedVarints(const uint8_t* p, const uint8_t* end, int64_t* out) {
  int64_t* const begin = out;
  while (p < end) {
    uint64_t v = *p++;
    if (v >= 0x80) {
      v &= 0x7f;
      int shift = 7;
      while (true) {
        const uint64_t byte = *p++;
        v |= (byte & 0x7f) << shift;
        if (byte < 0x80 || shift >= 63) break;
        shift += 7;
      }
    }
    *out++ = static_cast<int64_t>(v);
  }
  return static_cast<size_t>(out - begin);
}

bool IsValidUtf8(const uint8_t* p, size_t n) {
  const uint8_t* end = p + n;
  while (p < end) {
    // ASCII fast path, eight bytes at a time.
    if (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        p += 8;
        continue;
      }
    }
    const uint8_t c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra;
    uint8_t lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      if (c == 0xe0) lo = 0xa0;  // no overlong 3-byte forms
      if (c == 0xed) hi = 0x9f;  // no surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      if (c == 0xf0) lo = 0x90;  // no overlong 4-byte forms
      if (c == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= extra; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
    }
    p += extra + 1;
  }
  return true;
}

}  // namespace sluice::records_internal
