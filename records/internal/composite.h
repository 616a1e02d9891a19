// SparseFeature and RaggedFeature in an Example parse spec: each reads
// several keys of the Example, so ExampleParser expands the spec into a
// "raw" spec of plain features (the user's FixedLen / VarLen /
// FixedLenSequence entries, then one VarLen entry per further key that a
// composite feature reads), parses that with its usual zero-copy walk, and
// assembles the composite outputs from the raw ones here.
//
// Outputs, in spec order (feature_spec.h):
//   SparseFeature "k":  "k.indices" int64 [nnz, rank], "k" values [nnz],
//                       "k.dense_shape" int64 [rank] (batch: rank + 1, the
//                       example index first)
//   RaggedFeature "k":  "k" flat values [n, uniform dims...], then
//                       "k.row_splits_<i>" for each ragged dimension,
//                       outermost first (batch: row_splits_0 splits the
//                       examples)
// as tf.io's SparseTensor / RaggedTensor components. Values are the raw
// tensors themselves (no copy) unless sparse indices need sorting.
//
// Immutable after PlanComposite; thread-safe to read.
#ifndef SLUICE_RECORDS_INTERNAL_COMPOSITE_H_
#define SLUICE_RECORDS_INTERNAL_COMPOSITE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/records/feature_spec.h"

namespace sluice::records_internal {

struct CompositePlan {
  struct Part {
    RaggedPartition::Kind kind;
    std::string key;
    size_t raw = 0;      // raw feature index (not kUniformRowLength)
    int64_t length = 0;  // kUniformRowLength
  };
  struct Output {
    std::string key;
    FeatureKind kind = FeatureKind::kFixedLen;
    DType dtype = DType::kInt64;
    size_t raw = 0;  // plain: the feature itself; composite: the values' feature
    std::string value_key;
    // kSparse
    std::vector<size_t> index_raw;
    std::vector<std::string> index_keys;
    std::vector<int64_t> size;
    bool already_sorted = false;
    // kRagged: partitions[0, dense_from) are ragged dimensions (they give
    // row splits); partitions[dense_from, end) are UniformRowLengths applied
    // to the still-dense values (they reshape them), as tf.io does.
    std::vector<Part> parts;
    size_t dense_from = 0;
    DType splits_dtype = DType::kInt64;
    // A SequenceExample feature list: rows are steps ("step N" in errors).
    bool steps = false;
  };
  ParseSpec raw_spec;
  // Position of raw feature i's first component in the raw parser's single
  // and batch Elements.
  std::vector<size_t> raw_single_pos;
  std::vector<size_t> raw_batch_pos;
  std::vector<Output> outputs;
  std::shared_ptr<std::vector<std::string>> single_names;
  std::shared_ptr<std::vector<std::string>> batch_names;
};

// Null when `spec` has no SparseFeature or RaggedFeature (parse as is).
// InvalidArgument naming the feature for a bad composite entry or a key
// read as two different things. `sequence`: a SequenceExample's sequence
// spec, whose raw features are feature lists (RaggedFeature only).
Result<std::shared_ptr<const CompositePlan>> PlanComposite(const ParseSpec& spec,
                                                           bool sequence = false);

// The outputs from the raw parser's ParseSingle / ParseBatch Element (of
// `rows` examples). Errors name the feature, the key and, in a batch, the
// example. AssembleBatch with rows < 0 assembles one SequenceExample's
// feature lists (the raw Element in the batch layout, one row per step;
// each RaggedFeature has its value list's steps, which its partition lists
// must share): a RaggedFeature is then [steps, ...] with row_splits_0 over
// the steps, as tf.io's.
Result<Element> AssembleSingle(const CompositePlan& plan, const Element& raw);
Result<Element> AssembleBatch(const CompositePlan& plan, const Element& raw, int64_t rows);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_COMPOSITE_H_
