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

std::string_view FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kFixedLen: return "FixedLenFeature";
    case FeatureKind::kVarLen: return "VarLenFeature";
    case FeatureKind::kFixedLenSequence: return "FixedLenSequenceFeature";
  }
  return "?";
}

}  // namespace sluice
