// A ParseSpec checked and compiled for the parsers, and the error messages
// they share. Immutable after CompileSpec; thread-safe to read.
#ifndef SLUICE_RECORDS_INTERNAL_PARSE_SPEC_H_
#define SLUICE_RECORDS_INTERNAL_PARSE_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/tensor.h"
#include "sluice/records/feature_spec.h"
#include "sluice/records/internal/feature_walk.h"

namespace sluice::records_internal {

struct CompiledFeature {
  std::string key;
  FeatureKind kind = FeatureKind::kFixedLen;
  DType dtype = DType::kInt64;
  ValueKind value_kind = ValueKind::kInt64;
  // kFixedLen: the value shape; kFixedLenSequence: the item shape.
  Shape shape;
  // Values per example (kFixedLen) or per item (kFixedLenSequence); 1 for kVarLen.
  int64_t elements = 1;
  // DTypeSize(dtype).
  size_t element_size = 8;
  // kFixedLen: the default, shape `shape` (absent: required).
  // kFixedLenSequence: the scalar padding value (absent: 0 or "").
  std::optional<Tensor> default_value;
  bool allow_missing = false;
};

// Where a spec is used; decides which kinds and options are valid.
enum class SpecRole {
  kExample,   // ExampleParser: all kinds, FixedLenSequence needs allow_missing
  kContext,   // SequenceExample context: FixedLen and VarLen
  kSequence,  // SequenceExample feature lists: FixedLenSequence (no default) and VarLen
};

// Checks `spec` and compiles it. InvalidArgument naming the key on error.
Result<std::vector<CompiledFeature>> CompileSpec(const ParseSpec& spec, SpecRole role);

std::vector<std::string> KeysOf(const std::vector<CompiledFeature>& features);

// Names the feature in an error: "feature 'scores'", "feature 'scores' in
// example 3 of the batch", "context feature 'id'", "feature list 'vec' step 2".
struct Where {
  std::string_view what = "feature";  // "feature", "context feature", "feature list"
  std::string_view key;
  int64_t batch_index = -1;  // >= 0: "in example N of the batch"
  int64_t step = -1;         // >= 0: "step N"
  std::string ToString() const;
};

// The shared error texts; see docs/example.md for TensorFlow's versions.
Status MissingFeatureError(const Where& where, const CompiledFeature& f);
Status DTypeMismatchError(const Where& where, const CompiledFeature& f, ValueKind found);
Status ValueCountError(const Where& where, const CompiledFeature& f, uint64_t found);
Status NotMultipleError(const Where& where, const CompiledFeature& f, uint64_t found);
// DataLoss "malformed <message> at byte N: <reason>".
Status MalformedError(std::string_view message, const uint8_t* begin, const WireError& err);

// Checks the resolved value of a FixedLen, VarLen or FixedLenSequence
// feature of one example (absent, kind, count). On success *items is the
// number of values (VarLen), or of items (FixedLenSequence), or 0 for an
// absent FixedLen feature that takes its default and 1 for a present one.
Status CheckFeatureValueSlow(const CompiledFeature& f, const FeatureValue& v, const Where& where,
                             uint64_t* items);
inline Status CheckFeatureValue(const CompiledFeature& f, const FeatureValue& v, const Where& where,
                                uint64_t* items) {
  // The usual cases inline: present with the right kind and count.
  if (v.kind == f.value_kind) {
    if (f.kind == FeatureKind::kFixedLen && v.count == static_cast<uint64_t>(f.elements)) {
      *items = 1;
      return Status::OK();
    }
    if (f.kind == FeatureKind::kVarLen) {
      *items = v.count;
      return Status::OK();
    }
  }
  return CheckFeatureValueSlow(f, v, where, items);
}

// --- Writing outputs ---------------------------------------------------------

// Writes one example's values of `f` at `out` (elements of f.dtype): the
// values of `v`, or the default for an absent FixedLen feature. `v` must
// have passed CheckFeatureValue. Returns the number of elements written.
uint64_t WriteFeatureValues(const CompiledFeature& f, const FeatureValue& v, const ByteSpan* more,
                            void* out);
// Fills `n` elements at `out` with f's padding value (its default, else 0
// or an empty string).
void WritePadding(const CompiledFeature& f, void* out, uint64_t n);
// Adds the buffers that keep f's string default alive to t's owners.
void AddDefaultOwners(const CompiledFeature& f, Tensor* t);

// InvalidArgument unless `serialized` lies inside `owner` (a null owner is
// always fine).
Status CheckOwner(std::string_view serialized, const Buffer& owner, std::string_view what);

// Copies the bytes of every element of the string tensors among `tensors`
// into one new buffer, repoints the views there and adds the buffer as
// their owner, so the tensors no longer depend on the input bytes.
Status CopyStringsToOwnedBuffer(std::vector<Tensor>& tensors);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_PARSE_SPEC_H_
