#include "sluice/records/internal/feature_walk.h"

#include <algorithm>
#include <cstring>

namespace sluice::records_internal {
namespace {

constexpr uint32_t kTagField1Bytes = MakeTag(1, kWireLengthDelimited);  // 0x0a
constexpr uint32_t kTagField2Bytes = MakeTag(2, kWireLengthDelimited);  // 0x12
constexpr uint32_t kTagField3Bytes = MakeTag(3, kWireLengthDelimited);  // 0x1a
constexpr uint32_t kTagField1Varint = MakeTag(1, kWireVarint);          // 0x08
constexpr uint32_t kTagField1Fixed32 = MakeTag(1, kWireFixed32);        // 0x0d

// Entering a nested message costs one level, as protobuf's ParseMessage.
inline bool EnterMessage(int depth, const uint8_t* at, WireError* err) {
  if (depth - 1 < 0) return Fail(err, WireErrorCode::kTooDeep, at, kRecursionLimit);
  return true;
}

// Validates one list message body and counts its values.
bool CountList(ValueKind kind, const uint8_t* p, const uint8_t* end, int depth, uint64_t* count,
               WireError* err) {
  uint64_t n = 0;
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, err)) return false;
    if (tag == kTagField1Bytes) {
      uint32_t len;
      if (!ReadLength(p, end, &len, err)) return false;
      switch (kind) {
        case ValueKind::kBytes: ++n; break;
        case ValueKind::kFloat:
          if (len % 4 != 0) return Fail(err, WireErrorCode::kPackedFloatSize, at, len);
          n += len / 4;
          break;
        case ValueKind::kInt64: {
          uint64_t k;
          if (!CountPackedVarints(p, p + len, &k, err)) return false;
          n += k;
          break;
        }
        case ValueKind::kNone: break;
      }
      p += len;
    } else if (tag == kTagField1Fixed32 && kind == ValueKind::kFloat) {
      if (end - p < 4) return Fail(err, WireErrorCode::kTruncatedFixed, p, 4);
      p += 4;
      ++n;
    } else if (tag == kTagField1Varint && kind == ValueKind::kInt64) {
      uint64_t ignored;
      if (!ReadVarint(p, end, &ignored, err)) return false;
      ++n;
    } else if (!SkipField(tag, at, p, end, depth, err)) {
      return false;
    }
  }
  *count = n;
  return true;
}

inline void AddList(FeatureValue* v, ValueKind kind, const uint8_t* body, uint32_t size, uint64_t n,
                    std::vector<ByteSpan>* more) {
  if (v->kind != kind) {
    // The oneof switches: what the Feature held before is dropped.
    v->kind = kind;
    v->list = body;
    v->list_size = size;
    v->num_more = 0;
    v->count = n;
    return;
  }
  if (more != nullptr) {
    if (v->num_more == 0) v->more_begin = static_cast<uint32_t>(more->size());
    more->push_back(ByteSpan{body, size});
  }
  ++v->num_more;
  v->count += n;
}

// One map entry (key = 1, value = 2) with budget `depth` inside it.
bool WalkEntry(const uint8_t* p, const uint8_t* end, int depth, const WalkOutput& out) {
  const uint8_t* key = nullptr;
  uint32_t key_len = 0;
  FeatureValue pending{};
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, out.err)) return false;
    if (tag == kTagField1Bytes) {
      uint32_t len;
      if (!ReadLength(p, end, &len, out.err)) return false;
      if (!IsValidUtf8(p, len)) return Fail(out.err, WireErrorCode::kBadUtf8Key, p);
      key = p;
      key_len = len;
      p += len;
    } else if (tag == kTagField2Bytes) {
      uint32_t len;
      if (!ReadLength(p, end, &len, out.err)) return false;
      if (!EnterMessage(depth, at, out.err)) return false;
      if (!WalkFeature(p, p + len, depth - 1, &pending, out.more, out.err)) return false;
      p += len;
    } else if (!SkipField(tag, at, p, end, depth, out.err)) {
      return false;
    }
  }
  if (out.table != nullptr) {
    const int index = out.table->Find(key, key_len, out.hint);
    if (index >= 0) out.values[index] = pending;
  }
  return true;
}

}  // namespace

ValueKind ValueKindOf(DType dtype) {
  switch (dtype) {
    case DType::kString: return ValueKind::kBytes;
    case DType::kFloat32: return ValueKind::kFloat;
    case DType::kInt64: return ValueKind::kInt64;
    default: return ValueKind::kNone;
  }
}

DType DTypeOfValueKind(ValueKind kind) {
  switch (kind) {
    case ValueKind::kBytes: return DType::kString;
    case ValueKind::kFloat: return DType::kFloat32;
    default: return DType::kInt64;
  }
}

std::string_view ValueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kBytes: return "bytes_list";
    case ValueKind::kFloat: return "float_list";
    case ValueKind::kInt64: return "int64_list";
    case ValueKind::kNone: break;
  }
  return "no kind";
}

uint64_t HashKey(const uint8_t* p, size_t n) {
  constexpr uint64_t kMul1 = 0x9e3779b97f4a7c15ull;
  constexpr uint64_t kMul2 = 0xbf58476d1ce4e5b9ull;
  uint64_t h = (n + 1) * kMul1;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul2;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    tail = lo | (static_cast<uint64_t>(hi) << 32);
  } else if (n > 0) {
    tail = p[0] | (static_cast<uint64_t>(p[n / 2]) << 8) | (static_cast<uint64_t>(p[n - 1]) << 16);
  }
  h = (h ^ tail) * kMul2;
  return h ^ (h >> 29);
}

KeyTable::KeyTable(const std::vector<std::string>& keys) : num_keys_(keys.size()) {
  size_t capacity = 8;
  while (capacity < 2 * keys.size()) capacity *= 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto* data = reinterpret_cast<const uint8_t*>(keys[i].data());
    const uint64_t h = HashKey(data, keys[i].size());
    uint64_t s = h & mask_;
    while (slots_[s].index >= 0) s = (s + 1) & mask_;
    slots_[s] =
        Slot{h, static_cast<int32_t>(i), static_cast<uint32_t>(keys[i].size()), blob_.size()};
    offset_.push_back(blob_.size());
    size_.push_back(static_cast<uint32_t>(keys[i].size()));
    blob_ += keys[i];
  }
  by_rank_.resize(keys.size());
  for (uint32_t i = 0; i < keys.size(); ++i) by_rank_[i] = i;
  std::sort(by_rank_.begin(), by_rank_.end(),
            [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  rank_.resize(keys.size());
  for (uint32_t r = 0; r < keys.size(); ++r) rank_[by_rank_[r]] = r;
}

namespace {

// Two possibly overlapping loads of T cover [p, p + n) for
// sizeof(T) <= n <= 2 * sizeof(T).
template <typename T>
inline bool SameEnds(const uint8_t* a, const uint8_t* b, size_t n) {
  T a0, a1, b0, b1;
  std::memcpy(&a0, a, sizeof(T));
  std::memcpy(&b0, b, sizeof(T));
  std::memcpy(&a1, a + n - sizeof(T), sizeof(T));
  std::memcpy(&b1, b + n - sizeof(T), sizeof(T));
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

// a[0, n) == b[0, n) without a loop for the short keys features usually
// have (a byte loop mispredicts its exit for every key length).
inline bool SameBytes(const uint8_t* a, const uint8_t* b, size_t n) {
  if (n >= 8) return n <= 16 ? SameEnds<uint64_t>(a, b, n) : std::memcmp(a, b, n) == 0;
  if (n >= 4) return SameEnds<uint32_t>(a, b, n);
  if (n >= 2) return SameEnds<uint16_t>(a, b, n);
  return n == 0 || a[0] == b[0];
}

}  // namespace

int KeyTable::Find(const uint8_t* key, size_t n, uint32_t* hint) const {
  const auto* blob = reinterpret_cast<const uint8_t*>(blob_.data());
  if (hint == nullptr) return FindByHash(key, n);
  if (*hint < num_keys_) {
    const uint32_t index = by_rank_[*hint];
    if (size_[index] == n && SameBytes(blob + offset_[index], key, n)) {
      ++*hint;
      return static_cast<int>(index);
    }
  }
  const int index = FindByHash(key, n);
  if (index >= 0) *hint = rank_[static_cast<size_t>(index)] + 1;
  return index;
}

int KeyTable::FindByHash(const uint8_t* key, size_t n) const {
  const uint64_t h = HashKey(key, n);
  const auto* blob = reinterpret_cast<const uint8_t*>(blob_.data());
  for (uint64_t s = h & mask_;; s = (s + 1) & mask_) {
    const Slot& slot = slots_[s];
    if (slot.index < 0) return -1;
    if (slot.hash == h && slot.size == n && SameBytes(blob + slot.offset, key, n)) {
      return slot.index;
    }
  }
}

bool WalkFeature(const uint8_t* p, const uint8_t* end, int depth, FeatureValue* value,
                 std::vector<ByteSpan>* more, WireError* err) {
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, err)) return false;
    ValueKind kind;
    if (tag == kTagField1Bytes) {
      kind = ValueKind::kBytes;
    } else if (tag == kTagField2Bytes) {
      kind = ValueKind::kFloat;
    } else if (tag == kTagField3Bytes) {
      kind = ValueKind::kInt64;
    } else {
      if (!SkipField(tag, at, p, end, depth, err)) return false;
      continue;
    }
    uint32_t len;
    if (!ReadLength(p, end, &len, err)) return false;
    if (!EnterMessage(depth, at, err)) return false;
    uint64_t n;
    if (!CountList(kind, p, p + len, depth - 1, &n, err)) return false;
    AddList(value, kind, p, len, n, more);
    p += len;
  }
  return true;
}

bool WalkFeatures(const uint8_t* p, const uint8_t* end, int depth, const WalkOutput& out) {
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, out.err)) return false;
    if (tag == kTagField1Bytes) {
      uint32_t len;
      if (!ReadLength(p, end, &len, out.err)) return false;
      if (!EnterMessage(depth, at, out.err)) return false;
      if (!WalkEntry(p, p + len, depth - 1, out)) return false;
      p += len;
    } else if (!SkipField(tag, at, p, end, depth, out.err)) {
      return false;
    }
  }
  return true;
}

bool WalkExample(const uint8_t* p, const uint8_t* end, const WalkOutput& out) {
  if (out.table != nullptr) {
    for (size_t i = 0; i < out.table->size(); ++i) out.values[i] = FeatureValue{};
  }
  const int depth = kRecursionLimit;
  while (p < end) {
    const uint8_t* at = p;
    uint32_t tag;
    if (!ReadTag(p, end, &tag, out.err)) return false;
    if (tag == kTagField1Bytes) {  // Example.features
      uint32_t len;
      if (!ReadLength(p, end, &len, out.err)) return false;
      if (!EnterMessage(depth, at, out.err)) return false;
      if (!WalkFeatures(p, p + len, depth - 1, out)) return false;
      p += len;
    } else if (!SkipField(tag, at, p, end, depth, out.err)) {
      return false;
    }
  }
  return true;
}

// --- Copying values out ------------------------------------------------------

namespace {

// Calls fn(body, end) for each list body of v.
template <typename Fn>
inline void ForEachList(const FeatureValue& v, const ByteSpan* more, Fn&& fn) {
  fn(v.list, v.list + v.list_size);
  for (uint32_t i = 0; i < v.num_more; ++i) {
    const ByteSpan& s = more[v.more_begin + i];
    fn(s.data, s.data + s.size);
  }
}

// Skips a field known to be well formed.
inline void SkipValid(uint32_t tag, const uint8_t* at, const uint8_t*& p, const uint8_t* end) {
  WireError ignored;
  SkipField(tag, at, p, end, kRecursionLimit, &ignored);
}

}  // namespace

void CopyInt64Values(const FeatureValue& v, const ByteSpan* more, int64_t* out) {
  ForEachList(v, more, [&](const uint8_t* p, const uint8_t* end) {
    WireError ignored;
    while (p < end) {
      const uint8_t* at = p;
      uint32_t tag;
      ReadTag(p, end, &tag, &ignored);
      if (tag == kTagField1Bytes) {
        uint32_t len;
        ReadLength(p, end, &len, &ignored);
        out += DecodePackedVarints(p, p + len, out);
        p += len;
      } else if (tag == kTagField1Varint) {
        uint64_t x;
        ReadVarint(p, end, &x, &ignored);
        *out++ = static_cast<int64_t>(x);
      } else {
        SkipValid(tag, at, p, end);
      }
    }
  });
}

void CopyFloatValues(const FeatureValue& v, const ByteSpan* more, float* out) {
  ForEachList(v, more, [&](const uint8_t* p, const uint8_t* end) {
    WireError ignored;
    while (p < end) {
      const uint8_t* at = p;
      uint32_t tag;
      ReadTag(p, end, &tag, &ignored);
      if (tag == kTagField1Bytes) {
        uint32_t len;
        ReadLength(p, end, &len, &ignored);
        if constexpr (std::endian::native == std::endian::little) {
          if (len != 0) std::memcpy(out, p, len);
          out += len / 4;
        } else {
          for (uint32_t i = 0; i < len; i += 4) {
            *out++ = std::bit_cast<float>(LoadLittleEndian32(p + i));
          }
        }
        p += len;
      } else if (tag == kTagField1Fixed32) {
        *out++ = std::bit_cast<float>(LoadLittleEndian32(p));
        p += 4;
      } else {
        SkipValid(tag, at, p, end);
      }
    }
  });
}

size_t CopyBytesValues(const FeatureValue& v, const ByteSpan* more, std::string_view* out) {
  size_t total = 0;
  ForEachList(v, more, [&](const uint8_t* p, const uint8_t* end) {
    WireError ignored;
    while (p < end) {
      const uint8_t* at = p;
      uint32_t tag;
      ReadTag(p, end, &tag, &ignored);
      if (tag == kTagField1Bytes) {
        uint32_t len;
        ReadLength(p, end, &len, &ignored);
        *out++ = std::string_view(reinterpret_cast<const char*>(p), len);
        total += len;
        p += len;
      } else {
        SkipValid(tag, at, p, end);
      }
    }
  });
  return total;
}

}  // namespace sluice::records_internal
