#include "random_example.h"

#include <algorithm>
#include <cstring>

namespace sluice::testing {
namespace {

constexpr uint32_t kVarint = 0, kFixed64 = 1, kDelimited = 2, kStartGroup = 3, kEndGroup = 4,
                   kFixed32 = 5;

bool Chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

int Uniform(std::mt19937_64& rng, int lo, int hi) {  // [lo, hi]
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

std::string RandomBytes(std::mt19937_64& rng, int max_len) {
  std::string s(static_cast<size_t>(Uniform(rng, 0, max_len)), '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

int64_t RandomInt64(std::mt19937_64& rng) {
  switch (Uniform(rng, 0, 5)) {
    case 0: return Uniform(rng, 0, 127);
    case 1: return -Uniform(rng, 1, 1000);
    case 2: return INT64_MIN;
    case 3: return INT64_MAX;
    case 4: return static_cast<int64_t>(rng());
    default: return Uniform(rng, 128, 1 << 20);
  }
}

uint32_t RandomFloatBits(std::mt19937_64& rng) {
  static const uint32_t kSpecial[] = {0x00000000u, 0x80000000u, 0x7fc00000u, 0x7f800000u,
                                      0xff800000u, 0x00000001u, 0x3f800000u, 0x7fa00001u};
  if (Chance(rng, 0.3)) return kSpecial[Uniform(rng, 0, 7)];
  return static_cast<uint32_t>(rng());
}

// An unknown field for a message whose known fields are 1..max_known (all
// length-delimited): a field number above them, or a known one with another
// wire type; groups may nest. `min_field` excludes low field numbers
// altogether (list messages know field 1 with several wire types).
void UnknownField(std::mt19937_64& rng, WireWriter& w, uint32_t max_known, int depth,
                  uint32_t min_field = 1) {
  static const uint32_t kBigFields[] = {15, 16, 2047, 2048, 536870911};
  static const uint32_t kTypes[] = {kVarint, kFixed64, kDelimited, kStartGroup, kFixed32};
  uint32_t field, wire;
  do {
    field = Chance(rng, 0.3) ? kBigFields[Uniform(rng, 0, 4)]
                             : static_cast<uint32_t>(Uniform(rng, 1, 12));
    wire = kTypes[Uniform(rng, 0, 4)];
    if (depth <= 0 && wire == kStartGroup) wire = kFixed32;
  } while (field < min_field || (field <= max_known && wire == kDelimited));
  switch (wire) {
    case kVarint:
      w.Tag(field, kVarint);
      w.Varint(static_cast<uint64_t>(RandomInt64(rng)));
      break;
    case kFixed64:
      w.Tag(field, kFixed64);
      w.Fixed64(rng());
      break;
    case kDelimited: w.Delimited(field, RandomBytes(rng, 6)); break;
    case kStartGroup: {
      w.Tag(field, kStartGroup);
      const int n = Uniform(rng, 0, 3);
      for (int i = 0; i < n; ++i) UnknownField(rng, w, 0, depth - 1);
      w.Tag(field, kEndGroup);
      break;
    }
    default:
      w.Tag(field, kFixed32);
      w.Fixed32(static_cast<uint32_t>(rng()));
      break;
  }
}

void MaybeUnknown(std::mt19937_64& rng, WireWriter& w, const RandomExampleOptions& o,
                  uint32_t max_known, uint32_t min_field = 1) {
  while (Chance(rng, o.weirdness)) UnknownField(rng, w, max_known, 3, min_field);
}

const KeyHint& PickKey(std::mt19937_64& rng, const RandomExampleOptions& o) {
  static const KeyHint kEmpty;
  if (o.keys.empty()) return kEmpty;
  return o.keys[static_cast<size_t>(Uniform(rng, 0, static_cast<int>(o.keys.size()) - 1))];
}

std::string KeyText(std::mt19937_64& rng, const RandomExampleOptions& o, const KeyHint& hint) {
  if (Chance(rng, o.bad_utf8)) {
    static const char* kBad[] = {"\xff", "a\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"};
    return kBad[Uniform(rng, 0, 4)];
  }
  if (Chance(rng, o.bad_utf8)) return "caf\xc3\xa9";  // valid UTF-8, not ASCII
  return hint.key;
}

std::string ListBody(std::mt19937_64& rng, const RandomExampleOptions& o, int kind, int count) {
  WireWriter w(&rng, o.weirdness);
  int written = 0;
  while (written < count) {
    const int n = Chance(rng, 0.8) ? count - written : Uniform(rng, 1, count - written);
    if (kind == 1) {
      for (int i = 0; i < n; ++i) w.Delimited(1, RandomBytes(rng, 5));
    } else if (kind == 2) {
      if (Chance(rng, 0.7)) {
        std::string packed;
        for (int i = 0; i < n; ++i) {
          const uint32_t bits = RandomFloatBits(rng);
          packed.append(reinterpret_cast<const char*>(&bits), 4);
        }
        w.Delimited(1, packed);
      } else {
        for (int i = 0; i < n; ++i) {
          w.Tag(1, kFixed32);
          w.Fixed32(RandomFloatBits(rng));
        }
      }
    } else {
      if (Chance(rng, 0.7)) {
        WireWriter packed(&rng, o.weirdness);
        for (int i = 0; i < n; ++i) packed.Varint(static_cast<uint64_t>(RandomInt64(rng)));
        w.Delimited(1, packed.str());
      } else {
        for (int i = 0; i < n; ++i) {
          w.Tag(1, kVarint);
          w.Varint(static_cast<uint64_t>(RandomInt64(rng)));
        }
      }
    }
    written += n;
    MaybeUnknown(rng, w, o, 0, 2);
  }
  if (count == 0 && kind != 1 && Chance(rng, 0.2)) w.Delimited(1, "");  // an empty packed run
  MaybeUnknown(rng, w, o, 0, 2);
  return w.str();
}

std::string FeaturesBody(std::mt19937_64& rng, const RandomExampleOptions& o) {
  WireWriter w(&rng, o.weirdness);
  const int entries = Uniform(rng, 0, 7);
  for (int e = 0; e < entries; ++e) {
    const KeyHint& hint = PickKey(rng, o);
    WireWriter entry(&rng, o.weirdness);
    std::vector<int> parts;  // 1 key, 2 value, 0 unknown
    const int keys = Chance(rng, 0.9) ? 1 : Uniform(rng, 0, 2);
    const int values = Chance(rng, 0.85) ? 1 : Uniform(rng, 0, 2);
    for (int i = 0; i < keys; ++i) parts.push_back(1);
    for (int i = 0; i < values; ++i) parts.push_back(2);
    if (Chance(rng, o.weirdness)) parts.push_back(0);
    if (Chance(rng, o.weirdness * 2)) std::shuffle(parts.begin(), parts.end(), rng);
    for (int part : parts) {
      if (part == 1) {
        entry.Delimited(1, KeyText(rng, o, Chance(rng, 0.8) ? hint : PickKey(rng, o)));
      } else if (part == 2) {
        entry.Delimited(2, RandomFeature(rng, o, hint));
      } else {
        UnknownField(rng, entry, 2, 3);
      }
    }
    w.Delimited(1, entry.str());
    MaybeUnknown(rng, w, o, 1);
  }
  return w.str();
}

}  // namespace

bool WireWriter::Overlong() { return rng_ != nullptr && Chance(*rng_, overlong_ / 3); }

void WireWriter::Varint(uint64_t v) {
  uint8_t buf[10];
  int n = 0;
  do {
    buf[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  } while (v != 0);
  buf[n - 1] &= 0x7f;
  if (n < 10 && Overlong()) {
    const int extra = Uniform(*rng_, 1, 10 - n);
    buf[n - 1] |= 0x80;
    for (int i = 0; i < extra - 1; ++i) buf[n++] = 0x80;
    buf[n++] = 0x00;
  }
  out_.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

void WireWriter::Tag(uint32_t field, uint32_t wire_type) {
  const uint32_t tag = field << 3 | wire_type;
  if (tag < (1u << 28) && Overlong()) {
    // Five bytes whose last one carries bits above 32, which protobuf drops.
    uint8_t buf[5];
    for (int i = 0; i < 4; ++i) buf[i] = static_cast<uint8_t>(((tag >> (7 * i)) & 0x7f) | 0x80);
    buf[4] = static_cast<uint8_t>((tag >> 28) | (Uniform(*rng_, 0, 7) << 4));
    out_.append(reinterpret_cast<const char*>(buf), 5);
    return;
  }
  uint8_t buf[5];
  int n = 0;
  uint32_t v = tag;
  do {
    buf[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  } while (v != 0);
  buf[n - 1] &= 0x7f;
  out_.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

void WireWriter::Fixed32(uint32_t v) { out_.append(reinterpret_cast<const char*>(&v), 4); }
void WireWriter::Fixed64(uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), 8); }

void WireWriter::Delimited(uint32_t field, std::string_view body) {
  Tag(field, kDelimited);
  // Lengths: at most 5 bytes, overlong forms included.
  uint8_t buf[5];
  int n = 0;
  uint64_t v = body.size();
  do {
    buf[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  } while (v != 0);
  buf[n - 1] &= 0x7f;
  if (n < 5 && Overlong()) {
    const int extra = Uniform(*rng_, 1, 5 - n);
    buf[n - 1] |= 0x80;
    for (int i = 0; i < extra - 1; ++i) buf[n++] = 0x80;
    buf[n++] = 0x00;
  }
  out_.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  out_.append(body);
}

std::string RandomFeature(std::mt19937_64& rng, const RandomExampleOptions& o,
                          const KeyHint& hint) {
  WireWriter w(&rng, o.weirdness);
  int lists = 1;
  if (Chance(rng, 0.07)) {
    lists = 0;
  } else if (Chance(rng, 0.12)) {
    lists = Uniform(rng, 2, 3);
  }
  const bool follow = Chance(rng, 0.75);
  for (int l = 0; l < lists; ++l) {
    const int kind = follow && hint.kind != 0 ? hint.kind : Uniform(rng, 1, 3);
    int count;
    if (follow && hint.count >= 0) {
      count = hint.count;
    } else {
      count = Uniform(rng, 0, 3) * std::max(1, hint.multiple);
    }
    if (lists > 1) count = Uniform(rng, 0, 2);
    w.Delimited(static_cast<uint32_t>(kind), ListBody(rng, o, kind, count));
    MaybeUnknown(rng, w, o, 3);
  }
  return w.str();
}

std::string RandomExample(std::mt19937_64& rng, const RandomExampleOptions& o) {
  WireWriter w(&rng, o.weirdness);
  const int fields = Chance(rng, 0.85) ? 1 : Uniform(rng, 0, 3);
  for (int f = 0; f < fields; ++f) {
    w.Delimited(1, FeaturesBody(rng, o));
    MaybeUnknown(rng, w, o, 1);
  }
  return w.str();
}

std::string RandomSequenceExample(std::mt19937_64& rng, const RandomExampleOptions& o) {
  WireWriter w(&rng, o.weirdness);
  const int fields = Chance(rng, 0.8) ? 2 : Uniform(rng, 0, 4);
  for (int f = 0; f < fields; ++f) {
    const bool context = fields == 2 ? f == 0 : Chance(rng, 0.5);
    if (context) {
      w.Delimited(1, FeaturesBody(rng, o));
    } else {
      WireWriter lists(&rng, o.weirdness);
      const int entries = Uniform(rng, 0, 5);
      for (int e = 0; e < entries; ++e) {
        const KeyHint& hint = PickKey(rng, o);
        WireWriter entry(&rng, o.weirdness);
        const bool key_last = Chance(rng, o.weirdness);
        if (!key_last && Chance(rng, 0.95)) entry.Delimited(1, KeyText(rng, o, hint));
        const int values = Chance(rng, 0.9) ? 1 : Uniform(rng, 0, 2);
        for (int v = 0; v < values; ++v) {
          WireWriter list(&rng, o.weirdness);
          const int steps = Uniform(rng, 0, 4);
          for (int s = 0; s < steps; ++s) {
            list.Delimited(1, RandomFeature(rng, o, hint));
            MaybeUnknown(rng, list, o, 1);
          }
          entry.Delimited(2, list.str());
        }
        if (key_last) entry.Delimited(1, KeyText(rng, o, hint));
        MaybeUnknown(rng, entry, o, 2);
        lists.Delimited(1, entry.str());
      }
      w.Delimited(2, lists.str());
    }
    MaybeUnknown(rng, w, o, 2);
  }
  return w.str();
}

std::string Mutate(std::mt19937_64& rng, std::string bytes) {
  const int edits = Uniform(rng, 1, 3);
  for (int e = 0; e < edits; ++e) {
    const int n = static_cast<int>(bytes.size());
    switch (Uniform(rng, 0, 3)) {
      case 0:
        if (n > 0) bytes[static_cast<size_t>(Uniform(rng, 0, n - 1))] = static_cast<char>(rng());
        break;
      case 1: bytes.resize(static_cast<size_t>(Uniform(rng, 0, n))); break;
      case 2: bytes.insert(bytes.begin() + Uniform(rng, 0, n), static_cast<char>(rng())); break;
      default:
        if (n > 0) bytes.erase(bytes.begin() + Uniform(rng, 0, n - 1));
        break;
    }
  }
  return bytes;
}

}  // namespace sluice::testing
