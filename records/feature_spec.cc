#include "sluice/records/feature_spec.h"

namespace sluice {

FeatureSpec FixedLenFeature(DType dtype, Shape shape, std::optional<Tensor> default_value) {
  FeatureSpec s;
  s.kind = FeatureKind::kFixedLen;
  s.dtype = dtype;
  s.shape = std::move(shape);
  s.default_value = std::move(default_value);
  return s;
}

FeatureSpec VarLenFeature(DType dtype) {
  FeatureSpec s;
  s.kind = FeatureKind::kVarLen;
  s.dtype = dtype;
  return s;
}

FeatureSpec FixedLenSequenceFeature(DType dtype, Shape item_shape, bool allow_missing,
                                    std::optional<Tensor> default_value) {
  FeatureSpec s;
  s.kind = FeatureKind::kFixedLenSequence;
  s.dtype = dtype;
  s.shape = std::move(item_shape);
  s.allow_missing = allow_missing;
  s.default_value = std::move(default_value);
  return s;
}

FeatureSpec SparseFeature(std::vector<std::string> index_keys, std::string value_key, DType dtype,
                          std::vector<int64_t> size, bool already_sorted) {
  FeatureSpec s;
  s.kind = FeatureKind::kSparse;
  s.dtype = dtype;
  s.index_keys = std::move(index_keys);
  s.value_key = std::move(value_key);
  s.size = std::move(size);
  s.already_sorted = already_sorted;
  return s;
}

FeatureSpec RaggedFeature(DType dtype, std::string value_key,
                          std::vector<RaggedPartition> partitions, DType row_splits_dtype,
                          bool validate) {
  FeatureSpec s;
  s.kind = FeatureKind::kRagged;
  s.dtype = dtype;
  s.value_key = std::move(value_key);
  s.partitions = std::move(partitions);
  s.row_splits_dtype = row_splits_dtype;
  s.validate = validate;
  return s;
}

namespace {
RaggedPartition Partition(RaggedPartition::Kind kind, std::string key) {
  RaggedPartition p;
  p.kind = kind;
  p.key = std::move(key);
  return p;
}
}  // namespace

RaggedPartition RowSplits(std::string key) {
  return Partition(RaggedPartition::Kind::kRowSplits, std::move(key));
}
RaggedPartition RowLengths(std::string key) {
  return Partition(RaggedPartition::Kind::kRowLengths, std::move(key));
}
RaggedPartition RowStarts(std::string key) {
  return Partition(RaggedPartition::Kind::kRowStarts, std::move(key));
}
RaggedPartition RowLimits(std::string key) {
  return Partition(RaggedPartition::Kind::kRowLimits, std::move(key));
}
RaggedPartition ValueRowIds(std::string key) {
  return Partition(RaggedPartition::Kind::kValueRowIds, std::move(key));
}
RaggedPartition UniformRowLength(int64_t length) {
  RaggedPartition p = Partition(RaggedPartition::Kind::kUniformRowLength, "");
  p.length = length;
  return p;
}

std::string_view RaggedPartitionName(RaggedPartition::Kind kind) {
  switch (kind) {
    case RaggedPartition::Kind::kRowSplits: return "RowSplits";
    case RaggedPartition::Kind::kRowLengths: return "RowLengths";
    case RaggedPartition::Kind::kRowStarts: return "RowStarts";
    case RaggedPartition::Kind::kRowLimits: return "RowLimits";
    case RaggedPartition::Kind::kValueRowIds: return "ValueRowIds";
    case RaggedPartition::Kind::kUniformRowLength: return "UniformRowLength";
  }
  return "?";
}

std::string_view FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kFixedLen: return "FixedLenFeature";
    case FeatureKind::kVarLen: return "VarLenFeature";
    case FeatureKind::kFixedLenSequence: return "FixedLenSequenceFeature";
    case FeatureKind::kSparse: return "SparseFeature";
    case FeatureKind::kRagged: return "RaggedFeature";
  }
  return "?";
}

}  // namespace sluice
