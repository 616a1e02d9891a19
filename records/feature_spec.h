// FeatureSpec: how to parse one feature of a tf.train.Example or
// SequenceExample, mirroring tf.io.FixedLenFeature, tf.io.VarLenFeature and
// tf.io.FixedLenSequenceFeature. A ParseSpec is an ordered list of
// (key, FeatureSpec); parsers emit their outputs in that order.
//
//   ParseSpec spec = {
//       {"label", FixedLenFeature(DType::kInt64, {}, Tensor::Scalar<int64_t>(-1))},
//       {"scores", FixedLenFeature(DType::kFloat32, {3})},
//       {"tags", VarLenFeature(DType::kInt64)},
//       {"frames", FixedLenSequenceFeature(DType::kFloat32, {2}, /*allow_missing=*/true)},
//   };
//
// Only int64 (Int64List), float32 (FloatList) and string (BytesList) are
// valid dtypes. Specs are plain values; they are checked when a parser is
// created (ExampleParser::Create, SequenceExampleParser::Create), which
// reports InvalidArgument naming the key for: an unsupported dtype, a shape
// that is not fully defined, a default whose dtype or shape differs from the
// spec's, a duplicate key, a feature named like another VarLen feature's
// row lengths ("<key>.row_lengths"), and the TensorFlow rules noted below. A default
// Tensor is shared, not copied: don't modify it afterwards.
//
// Value type; thread-safety of any value.
#ifndef SLUICE_RECORDS_FEATURE_SPEC_H_
#define SLUICE_RECORDS_FEATURE_SPEC_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/dtype.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"

namespace sluice {

// A VarLen feature's row lengths are output beside its values as
// "<key>.row_lengths" (in batches, and per step in SequenceExamples).
inline constexpr std::string_view kRowLengthsSuffix = ".row_lengths";

enum class FeatureKind : uint8_t {
  // Exactly shape.num_elements() values per example, or the default.
  kFixedLen,
  // Any number of values, returned as a 1-D tensor (plus row lengths in a
  // batch).
  kVarLen,
  // Any number of items of `shape`: output [num_items, shape...], padded
  // across a batch with the default value.
  kFixedLenSequence,
};

struct FeatureSpec {
  FeatureKind kind = FeatureKind::kFixedLen;
  DType dtype = DType::kInt64;
  // kFixedLen: the value shape. kFixedLenSequence: the shape of one item.
  // kVarLen: unused (must stay a scalar shape).
  Shape shape;
  // kFixedLen: used when the feature is absent (else it is required); dtype
  // and shape must equal the spec's. kFixedLenSequence: the scalar used to
  // pad a batch (else 0 or ""). kVarLen: must be empty.
  std::optional<Tensor> default_value;
  // kFixedLenSequence only. An Example parse spec requires true (as
  // tf.io.parse_example does); in a SequenceExample's sequence spec, false
  // makes the feature list required.
  bool allow_missing = false;
};

// tf.io.FixedLenFeature(shape, dtype, default_value).
FeatureSpec FixedLenFeature(DType dtype, Shape shape,
                            std::optional<Tensor> default_value = std::nullopt);
// tf.io.VarLenFeature(dtype).
FeatureSpec VarLenFeature(DType dtype);
// tf.io.FixedLenSequenceFeature(shape, dtype, allow_missing, default_value).
FeatureSpec FixedLenSequenceFeature(DType dtype, Shape item_shape, bool allow_missing = false,
                                    std::optional<Tensor> default_value = std::nullopt);

// "FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature".
std::string_view FeatureKindName(FeatureKind kind);

// An ordered list of (feature key, spec). Keys must be unique.
using ParseSpec = std::vector<std::pair<std::string, FeatureSpec>>;

}  // namespace sluice

#endif  // SLUICE_RECORDS_FEATURE_SPEC_H_
