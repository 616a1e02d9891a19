#include "sluice/records/example_builder.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "sluice/records/internal/wire.h"

namespace sluice {

using records_internal::AppendVarint;
using records_internal::VarintSize;
using records_internal::WriteVarint;

namespace {

// Feature oneof field numbers.
constexpr uint8_t kBytesKind = 1;
constexpr uint8_t kFloatKind = 2;
constexpr uint8_t kInt64Kind = 3;
// Field 1, length-delimited: BytesList.value, packed FloatList/Int64List.value,
// map entry key, Features.feature, FeatureList.feature, Example.features,
// SequenceExample.context.
constexpr uint8_t kTag1 = 0x0a;
// Field 2, length-delimited: map entry value, SequenceExample.feature_lists.
constexpr uint8_t kTag2 = 0x12;

// List message bodies, as protobuf writes them: packed values (nothing for
// an empty list), one field per bytes value.
void AppendInt64Body(std::string* arena, std::span<const int64_t> values) {
  if (values.empty()) return;
  size_t bytes = 0;
  for (int64_t v : values) bytes += VarintSize(static_cast<uint64_t>(v));
  arena->push_back(static_cast<char>(kTag1));
  AppendVarint(arena, bytes);
  const size_t start = arena->size();
  arena->resize(start + bytes);
  auto* p = reinterpret_cast<uint8_t*>(arena->data() + start);
  for (int64_t v : values) p = WriteVarint(p, static_cast<uint64_t>(v));
}

void AppendFloatBody(std::string* arena, std::span<const float> values) {
  if (values.empty()) return;
  arena->push_back(static_cast<char>(kTag1));
  AppendVarint(arena, values.size() * 4);
  if constexpr (std::endian::native == std::endian::little) {
    arena->append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  } else {
    for (float f : values) {
      const uint32_t bits = std::bit_cast<uint32_t>(f);
      for (int i = 0; i < 4; ++i) arena->push_back(static_cast<char>(bits >> (8 * i)));
    }
  }
}

void AppendBytesBody(std::string* arena, std::span<const std::string_view> values) {
  for (std::string_view v : values) {
    arena->push_back(static_cast<char>(kTag1));
    AppendVarint(arena, v.size());
    arena->append(v);
  }
}

// Size of a length-delimited field with a 1-byte tag and `n` payload bytes.
inline size_t FieldSize(size_t n) { return 1 + VarintSize(n) + n; }

inline uint8_t* WriteField(uint8_t* p, uint8_t tag, size_t n) {
  *p++ = tag;
  return WriteVarint(p, n);
}

inline uint8_t* WriteBytes(uint8_t* p, const std::string& arena, size_t offset, size_t n) {
  if (n != 0) std::memcpy(p, arena.data() + offset, n);
  return p + n;
}

// A Feature message holding one list: its size, and writing it.
inline size_t FeatureSize(size_t body_size) { return FieldSize(body_size); }

inline uint8_t* WriteFeature(uint8_t* p, const std::string& arena, uint8_t kind, size_t offset,
                             size_t size) {
  p = WriteField(p, static_cast<uint8_t>(kind << 3 | 2), size);
  return WriteBytes(p, arena, offset, size);
}

}  // namespace

// --- ExampleBuilder ------------------------------------------------------------

std::string_view ExampleBuilder::KeyOf(const Entry& e) const {
  return std::string_view(arena_).substr(e.key_offset, e.key_size);
}

ExampleBuilder::Entry& ExampleBuilder::FindOrInsert(std::string_view key) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [this](const Entry& e, std::string_view k) { return KeyOf(e) < k; });
  if (it != entries_.end() && KeyOf(*it) == key) return *it;
  Entry e{arena_.size(), key.size(), 0, 0, 0};
  arena_.append(key);
  return *entries_.insert(it, e);
}

void ExampleBuilder::SetBody(Entry& e, uint8_t kind, size_t body_offset) {
  e.kind = kind;
  e.body_offset = body_offset;
  e.body_size = arena_.size() - body_offset;
}

ExampleBuilder& ExampleBuilder::AddInt64(std::string_view key, int64_t value) {
  return AddInt64List(key, std::span<const int64_t>(&value, 1));
}

ExampleBuilder& ExampleBuilder::AddInt64List(std::string_view key,
                                             std::span<const int64_t> values) {
  Entry& e = FindOrInsert(key);
  const size_t offset = arena_.size();
  AppendInt64Body(&arena_, values);
  SetBody(e, kInt64Kind, offset);
  return *this;
}

ExampleBuilder& ExampleBuilder::AddFloat(std::string_view key, float value) {
  return AddFloatList(key, std::span<const float>(&value, 1));
}

ExampleBuilder& ExampleBuilder::AddFloatList(std::string_view key, std::span<const float> values) {
  Entry& e = FindOrInsert(key);
  const size_t offset = arena_.size();
  AppendFloatBody(&arena_, values);
  SetBody(e, kFloatKind, offset);
  return *this;
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view key, std::string_view value) {
  return AddBytesList(key, std::span<const std::string_view>(&value, 1));
}

ExampleBuilder& ExampleBuilder::AddBytesList(std::string_view key,
                                             std::span<const std::string_view> values) {
  Entry& e = FindOrInsert(key);
  const size_t offset = arena_.size();
  AppendBytesBody(&arena_, values);
  SetBody(e, kBytesKind, offset);
  return *this;
}

size_t ExampleBuilder::FeaturesBodySize() const {
  size_t total = 0;
  for (const Entry& e : entries_) {
    total += FieldSize(FieldSize(e.key_size) + FieldSize(FeatureSize(e.body_size)));
  }
  return total;
}

uint8_t* ExampleBuilder::WriteFeaturesBody(uint8_t* p) const {
  for (const Entry& e : entries_) {
    const size_t feature = FeatureSize(e.body_size);
    p = WriteField(p, kTag1, FieldSize(e.key_size) + FieldSize(feature));  // map entry
    p = WriteField(p, kTag1, e.key_size);                                  // key
    p = WriteBytes(p, arena_, e.key_offset, e.key_size);
    p = WriteField(p, kTag2, feature);  // value: the Feature
    p = WriteFeature(p, arena_, e.kind, e.body_offset, e.body_size);
  }
  return p;
}

size_t ExampleBuilder::SerializedSize() const { return FieldSize(FeaturesBodySize()); }

void ExampleBuilder::SerializeTo(std::string* out) const {
  const size_t body = FeaturesBodySize();
  out->resize(FieldSize(body));
  auto* p = reinterpret_cast<uint8_t*>(out->data());
  p = WriteField(p, kTag1, body);  // Example.features
  WriteFeaturesBody(p);
}

std::string ExampleBuilder::Serialize() const {
  std::string out;
  SerializeTo(&out);
  return out;
}

void ExampleBuilder::Clear() {
  arena_.clear();
  entries_.clear();
}

// --- SequenceExampleBuilder ----------------------------------------------------

SequenceExampleBuilder::List& SequenceExampleBuilder::FindOrInsert(std::string_view key) {
  auto key_of = [this](const List& l) {
    return std::string_view(arena_).substr(l.key_offset, l.key_size);
  };
  auto it = std::lower_bound(lists_.begin(), lists_.end(), key,
                             [&](const List& l, std::string_view k) { return key_of(l) < k; });
  if (it != lists_.end() && key_of(*it) == key) return *it;
  List l{arena_.size(), key.size(), {}};
  arena_.append(key);
  return *lists_.insert(it, std::move(l));
}

SequenceExampleBuilder& SequenceExampleBuilder::AddFeatureList(std::string_view key) {
  FindOrInsert(key).steps.clear();
  return *this;
}

void SequenceExampleBuilder::AppendStep(std::string_view key, uint8_t kind, size_t body_offset) {
  const Step step{body_offset, arena_.size() - body_offset, kind};
  FindOrInsert(key).steps.push_back(step);
}

SequenceExampleBuilder& SequenceExampleBuilder::AppendInt64List(std::string_view key,
                                                                std::span<const int64_t> values) {
  const size_t offset = arena_.size();
  AppendInt64Body(&arena_, values);
  AppendStep(key, kInt64Kind, offset);
  return *this;
}

SequenceExampleBuilder& SequenceExampleBuilder::AppendFloatList(std::string_view key,
                                                                std::span<const float> values) {
  const size_t offset = arena_.size();
  AppendFloatBody(&arena_, values);
  AppendStep(key, kFloatKind, offset);
  return *this;
}

SequenceExampleBuilder& SequenceExampleBuilder::AppendBytesList(
    std::string_view key, std::span<const std::string_view> values) {
  const size_t offset = arena_.size();
  AppendBytesBody(&arena_, values);
  AppendStep(key, kBytesKind, offset);
  return *this;
}

size_t SequenceExampleBuilder::FeatureListsBodySize() const {
  size_t total = 0;
  for (const List& l : lists_) {
    size_t list = 0;
    for (const Step& s : l.steps) list += FieldSize(FeatureSize(s.body_size));
    total += FieldSize(FieldSize(l.key_size) + FieldSize(list));
  }
  return total;
}

size_t SequenceExampleBuilder::SerializedSize() const {
  return FieldSize(context_.FeaturesBodySize()) + FieldSize(FeatureListsBodySize());
}

void SequenceExampleBuilder::SerializeTo(std::string* out) const {
  const size_t context = context_.FeaturesBodySize();
  const size_t lists = FeatureListsBodySize();
  out->resize(FieldSize(context) + FieldSize(lists));
  auto* p = reinterpret_cast<uint8_t*>(out->data());
  p = WriteField(p, kTag1, context);  // SequenceExample.context
  p = context_.WriteFeaturesBody(p);
  p = WriteField(p, kTag2, lists);  // SequenceExample.feature_lists
  for (const List& l : lists_) {
    size_t list = 0;
    for (const Step& s : l.steps) list += FieldSize(FeatureSize(s.body_size));
    p = WriteField(p, kTag1, FieldSize(l.key_size) + FieldSize(list));  // map entry
    p = WriteField(p, kTag1, l.key_size);                               // key
    p = WriteBytes(p, arena_, l.key_offset, l.key_size);
    p = WriteField(p, kTag2, list);  // value: the FeatureList
    for (const Step& s : l.steps) {
      p = WriteField(p, kTag1, FeatureSize(s.body_size));  // FeatureList.feature
      p = WriteFeature(p, arena_, s.kind, s.body_offset, s.body_size);
    }
  }
}

std::string SequenceExampleBuilder::Serialize() const {
  std::string out;
  SerializeTo(&out);
  return out;
}

void SequenceExampleBuilder::Clear() {
  context_.Clear();
  arena_.clear();
  lists_.clear();
}

}  // namespace sluice
