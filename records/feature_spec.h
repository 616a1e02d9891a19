// FeatureSpec: how to parse one feature of a tf.train.Example or
// SequenceExample, mirroring tf.io.FixedLenFeature, tf.io.VarLenFeature and
// tf.io.FixedLenSequenceFeature, and the composite tf.io.SparseFeature and
// tf.io.RaggedFeature (assembled from several keys). A ParseSpec is an ordered list of
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
// A SparseFeature's outputs beside its values ("<key>").
inline constexpr std::string_view kIndicesSuffix = ".indices";
inline constexpr std::string_view kDenseShapeSuffix = ".dense_shape";
// A RaggedFeature's row splits: "<key>.row_splits_0", "<key>.row_splits_1"...
inline constexpr std::string_view kRowSplitsSuffix = ".row_splits_";
// A batch of SequenceExamples: each feature list's number of steps per
// example, "<key>.length" (tf.io.parse_sequence_example's lengths).
inline constexpr std::string_view kLengthSuffix = ".length";

enum class FeatureKind : uint8_t {
  // Exactly shape.num_elements() values per example, or the default.
  kFixedLen,
  // Any number of values, returned as a 1-D tensor (plus row lengths in a
  // batch).
  kVarLen,
  // Any number of items of `shape`: output [num_items, shape...], padded
  // across a batch with the default value.
  kFixedLenSequence,
  // tf.io.SparseFeature: values from `value_key`, their indices from the
  // int64 lists of `index_keys`. Output "<key>.indices" int64 [nnz, rank],
  // "<key>" values [nnz], "<key>.dense_shape" int64 [rank] (rank = number of
  // index keys, plus one in a batch: the example). Example specs only.
  kSparse,
  // tf.io.RaggedFeature: values from `value_key` (default: the key),
  // partitioned by `partitions` (outermost first). Output "<key>" (the flat
  // values) and "<key>.row_splits_<i>" for each ragged dimension, outermost
  // first (in a batch, row_splits_0 splits the examples). Example specs and
  // both SequenceExample specs (there, [steps, ...] per example).
  kRagged,
};

// One partition of a RaggedFeature (tf.io.RaggedFeature.RowSplits, ...).
struct RaggedPartition {
  enum class Kind : uint8_t {
    kRowSplits,
    kRowLengths,
    kRowStarts,
    kRowLimits,
    kValueRowIds,
    kUniformRowLength,
  };
  Kind kind = Kind::kRowLengths;
  std::string key;     // the int64 feature holding it (all but kUniformRowLength)
  int64_t length = 0;  // kUniformRowLength: the row length (>= 1)
};

// "RowSplits", "RowLengths", "RowStarts", "RowLimits", "ValueRowIds",
// "UniformRowLength".
std::string_view RaggedPartitionName(RaggedPartition::Kind kind);

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

  // kSparse: the int64 index features, one per dense dimension, and the
  // size of each dimension (indices must lie in [0, size)).
  std::vector<std::string> index_keys;
  std::vector<int64_t> size;
  // kSparse: the values' feature (required). kRagged: "" means the key.
  std::string value_key;
  // kSparse: true promises the indices are sorted (checked: unsorted is an
  // error); false sorts them (row-major order), as tf.sparse.reorder.
  bool already_sorted = false;
  // kRagged: outermost first; empty gives a 1-D tensor per example.
  std::vector<RaggedPartition> partitions;
  // kRagged: kInt32 (tf.io's default) or kInt64.
  DType row_splits_dtype = DType::kInt32;
  // kRagged: accepted for tf.io's signature; sluice always validates
  // partitions (tf.io only with validate=True).
  bool validate = false;
};

// tf.io.FixedLenFeature(shape, dtype, default_value).
FeatureSpec FixedLenFeature(DType dtype, Shape shape,
                            std::optional<Tensor> default_value = std::nullopt);
// tf.io.VarLenFeature(dtype).
FeatureSpec VarLenFeature(DType dtype);
// tf.io.FixedLenSequenceFeature(shape, dtype, allow_missing, default_value).
FeatureSpec FixedLenSequenceFeature(DType dtype, Shape item_shape, bool allow_missing = false,
                                    std::optional<Tensor> default_value = std::nullopt);

// tf.io.SparseFeature(index_key, value_key, dtype, size, already_sorted).
FeatureSpec SparseFeature(std::vector<std::string> index_keys, std::string value_key, DType dtype,
                          std::vector<int64_t> size, bool already_sorted = false);
// tf.io.RaggedFeature(dtype, value_key, partitions, row_splits_dtype, validate).
FeatureSpec RaggedFeature(DType dtype, std::string value_key = "",
                          std::vector<RaggedPartition> partitions = {},
                          DType row_splits_dtype = DType::kInt32, bool validate = false);
// Partitions, as tf.io.RaggedFeature.RowSplits(key) and so on.
RaggedPartition RowSplits(std::string key);
RaggedPartition RowLengths(std::string key);
RaggedPartition RowStarts(std::string key);
RaggedPartition RowLimits(std::string key);
RaggedPartition ValueRowIds(std::string key);
RaggedPartition UniformRowLength(int64_t length);

// "FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature",
// "SparseFeature", "RaggedFeature".
std::string_view FeatureKindName(FeatureKind kind);

// An ordered list of (feature key, spec). Keys must be unique.
using ParseSpec = std::vector<std::pair<std::string, FeatureSpec>>;

}  // namespace sluice

#endif  // SLUICE_RECORDS_FEATURE_SPEC_H_
