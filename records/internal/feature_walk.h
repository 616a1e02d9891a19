// Walking the Features map of a serialized Example (or a SequenceExample's
// context) without building protobuf objects, and copying the located
// values out.
//
// The walk resolves each key of a KeyTable to a FeatureValue with protobuf's
// merge semantics, so that the result equals what protobuf's parser would
// hold in Features.feature[key]:
//   - map entries with the same key: the last entry wins entirely;
//   - in one entry, the last `key` field wins and repeated `value` fields
//     merge as messages: the Feature's oneof switches to the kind seen last,
//     and lists of the same kind concatenate;
//   - an entry without a key has key "";
//   - a Feature whose kind is not set is reported as ValueKind::kNone, the
//     same as an absent key;
//   - float_list and int64_list values may be packed or not, in any mix;
//   - unknown fields, and known field numbers with an unexpected wire type,
//     are skipped (and must be well formed).
// The whole message is validated, including features not in the table, so
// the walk fails exactly when protobuf's ParseFromString fails (see wire.h).
//
// A FeatureValue points into the serialized bytes: they must outlive it.
// Pure functions on caller memory: thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_FEATURE_WALK_H_
#define SLUICE_RECORDS_INTERNAL_FEATURE_WALK_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/dtype.h"
#include "sluice/records/internal/wire.h"

namespace sluice::records_internal {

// Which list a Feature holds; the numbers are the oneof's field numbers.
enum class ValueKind : uint8_t { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };

// kString -> kBytes, kFloat32 -> kFloat, kInt64 -> kInt64, else kNone.
ValueKind ValueKindOf(DType dtype);
// The dtype a list kind holds. REQUIRES: kind != kNone.
DType DTypeOfValueKind(ValueKind kind);
// "bytes_list", "float_list", "int64_list", "no kind".
std::string_view ValueKindName(ValueKind kind);

struct ByteSpan {
  const uint8_t* data;
  uint32_t size;
};

// The resolved value of one feature: its kind and the bodies of the list
// messages (BytesList / FloatList / Int64List) that make it up, in order.
// Almost always one list; further ones are in a side vector of ByteSpans.
// Trivial on purpose (arrays of it are not zeroed on creation): value-
// initialize it, `FeatureValue v{};`, for an absent feature.
struct FeatureValue {
  const uint8_t* list;  // body of the first list message
  uint32_t list_size;
  uint32_t num_more;    // further list bodies ...
  uint32_t more_begin;  // ... at more[more_begin, more_begin + num_more)
  ValueKind kind;       // kNone: absent
  uint64_t count;       // number of values, over all lists
};

// An immutable map from feature key to index, built once per parser: open
// addressing over precomputed 64-bit hashes, no allocation on lookup.
class KeyTable {
 public:
  KeyTable() = default;
  // REQUIRES: keys are distinct.
  explicit KeyTable(const std::vector<std::string>& keys);

  // Index of `key`, or -1. `hint` (optional) is per-walk state that
  // predicts the next key: serialized Examples list their keys in sorted
  // order, so after one key the next one in sorted order is tried first and
  // a correct guess skips hashing. Start it at 0.
  int Find(const uint8_t* key, size_t n, uint32_t* hint = nullptr) const;
  size_t size() const { return num_keys_; }

 private:
  int FindByHash(const uint8_t* key, size_t n) const;

  struct Slot {
    uint64_t hash = 0;
    int32_t index = -1;
    uint32_t size = 0;    // key length
    uint64_t offset = 0;  // key bytes at blob_[offset, offset + size)
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  std::string blob_;
  size_t num_keys_ = 0;
  std::vector<uint32_t> by_rank_;  // key index by rank in sorted key order
  std::vector<uint32_t> rank_;     // rank by key index
  std::vector<uint64_t> offset_;   // key bytes by key index: blob_[offset_, offset_ + size_)
  std::vector<uint32_t> size_;
};

uint64_t HashKey(const uint8_t* p, size_t n);

// Where walk results go. `more` may be null when only validation is wanted
// (the values' extra lists are then not recorded and must not be copied).
struct WalkOutput {
  const KeyTable* table = nullptr;  // null: validate only, resolve nothing
  FeatureValue* values = nullptr;   // one per table entry
  std::vector<ByteSpan>* more = nullptr;
  WireError* err = nullptr;
  uint32_t* hint = nullptr;  // KeyTable::Find's prediction state, or null
};

// Walks a serialized Example: every values[i] is reset, then resolved.
// False (and *out.err set) if the bytes are not a valid Example.
bool WalkExample(const uint8_t* p, const uint8_t* end, const WalkOutput& out);

// Walks the body of a Features message whose recursion budget is `depth`
// (protobuf's count inside it). Does not reset values.
bool WalkFeatures(const uint8_t* p, const uint8_t* end, int depth, const WalkOutput& out);

// Walks the body of one Feature message with budget `depth`, merging it into
// *value (protobuf's message merge). `more` may be null (validate only).
bool WalkFeature(const uint8_t* p, const uint8_t* end, int depth, FeatureValue* value,
                 std::vector<ByteSpan>* more, WireError* err);

// Copy the values of `v` out; `more` is the side vector it was resolved
// with (unused when v.num_more == 0). REQUIRES: v.kind matches, the lists
// were validated by a walk, and `out` has room for v.count values.
void CopyInt64Values(const FeatureValue& v, const ByteSpan* more, int64_t* out);
void CopyFloatValues(const FeatureValue& v, const ByteSpan* more, float* out);
// Views into the serialized bytes. Returns the total byte length.
size_t CopyBytesValues(const FeatureValue& v, const ByteSpan* more, std::string_view* out);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_FEATURE_WALK_H_
