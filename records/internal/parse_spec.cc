#include "sluice/records/internal/parse_spec.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace sluice::records_internal {
namespace {

std::string Quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

Status SpecError(std::string_view key, const std::string& message) {
  return Status::InvalidArgument("parse spec: feature " + Quoted(key) + ": " + message);
}

std::string DTypeText(DType dtype) { return std::string(DTypeName(dtype)); }

Status CheckDefault(std::string_view key, const FeatureSpec& s, const Shape& expected_shape,
                    std::string_view what) {
  const Tensor& d = *s.default_value;
  if (d.dtype() != s.dtype) {
    return SpecError(key, std::string(what) + " has dtype " + DTypeText(d.dtype()) +
                              " but the feature's dtype is " + DTypeText(s.dtype));
  }
  if (!(d.shape() == expected_shape)) {
    return SpecError(key, std::string(what) + " has shape " + d.shape().ToString() +
                              " but must have shape " + expected_shape.ToString());
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<CompiledFeature>> CompileSpec(const ParseSpec& spec, SpecRole role) {
  std::vector<CompiledFeature> out;
  out.reserve(spec.size());
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i < spec.size(); ++i) {
    const std::string& key = spec[i].first;
    const FeatureSpec& s = spec[i].second;
    if (auto [it, inserted] = seen.emplace(key, i); !inserted) {
      return Status::InvalidArgument("parse spec: duplicate feature key " + Quoted(key) +
                                     " (entries " + std::to_string(it->second) + " and " +
                                     std::to_string(i) + ")");
    }
    const std::string kind_name(FeatureKindName(s.kind));
    if (ValueKindOf(s.dtype) == ValueKind::kNone) {
      return SpecError(key, "dtype " + DTypeText(s.dtype) +
                                " is not supported; features hold int64, float32 or string values");
    }
    if (role == SpecRole::kContext && s.kind == FeatureKind::kFixedLenSequence) {
      return SpecError(key,
                       "a SequenceExample's context spec takes FixedLenFeature and "
                       "VarLenFeature only; FixedLenSequenceFeature belongs in the sequence "
                       "spec");
    }
    if (role == SpecRole::kSequence && s.kind == FeatureKind::kFixedLen) {
      return SpecError(key,
                       "a SequenceExample's sequence spec takes FixedLenSequenceFeature and "
                       "VarLenFeature only; FixedLenFeature belongs in the context spec");
    }
    CompiledFeature f;
    f.key = key;
    f.kind = s.kind;
    f.dtype = s.dtype;
    f.value_kind = ValueKindOf(s.dtype);
    f.element_size = DTypeSize(s.dtype);
    f.allow_missing = s.allow_missing;
    switch (s.kind) {
      case FeatureKind::kFixedLen: {
        if (!s.shape.IsFullyDefined()) {
          return SpecError(key, "FixedLenFeature shape " + s.shape.ToString() +
                                    " must be fully defined (use FixedLenSequenceFeature for a "
                                    "variable number of items)");
        }
        if (!s.shape.CheckedNumElements()) {
          return SpecError(key, "FixedLenFeature shape " + s.shape.ToString() + " is too large");
        }
        if (s.allow_missing) {
          return SpecError(key, "allow_missing applies to FixedLenSequenceFeature only");
        }
        f.shape = s.shape;
        f.elements = s.shape.num_elements();
        if (s.default_value) {
          SLUICE_RETURN_IF_ERROR(CheckDefault(key, s, s.shape, "default value"));
          f.default_value = s.default_value;
        }
        break;
      }
      case FeatureKind::kVarLen:
        if (s.default_value || s.shape.unknown_rank() || s.shape.rank() != 0 || s.allow_missing) {
          return SpecError(key,
                           "VarLenFeature takes a dtype only (no shape, default value or "
                           "allow_missing)");
        }
        break;
      case FeatureKind::kFixedLenSequence: {
        if (!s.shape.IsFullyDefined()) {
          return SpecError(key, "FixedLenSequenceFeature item shape " + s.shape.ToString() +
                                    " must be fully defined");
        }
        const std::optional<int64_t> n = s.shape.CheckedNumElements();
        if (!n || *n == 0) {
          return SpecError(key, "FixedLenSequenceFeature item shape " + s.shape.ToString() +
                                    " must have at least one element and fit in int64");
        }
        if (role == SpecRole::kExample && !s.allow_missing) {
          return SpecError(key,
                           "FixedLenSequenceFeature requires allow_missing=true in an Example "
                           "spec (TensorFlow: \"Unsupported: FixedLenSequenceFeature requires "
                           "allow_missing to be True.\")");
        }
        if (role == SpecRole::kSequence && s.default_value) {
          return SpecError(key,
                           "a sequence feature cannot have a default value (TensorFlow: "
                           "feature_list dense defaults must be None); use allow_missing "
                           "to accept a missing feature list");
        }
        f.shape = s.shape;
        f.elements = *n;
        if (s.default_value) {
          SLUICE_RETURN_IF_ERROR(CheckDefault(key, s, Shape{}, "padding default value"));
          f.default_value = s.default_value;
        }
        break;
      }
      case FeatureKind::kSparse:
      case FeatureKind::kRagged:
        // ExampleParser expands them (records/internal/composite.h) before
        // compiling (SequenceExampleParser its context spec).
        return SpecError(key, kind_name +
                                  " is supported in Example specs (and RaggedFeature in "
                                  "SequenceExample specs) only");
    }
    out.push_back(std::move(f));
  }
  // A VarLen feature's row lengths come out beside it as "<key>.row_lengths"
  // (batches; sequence features): a feature of that name could not be told
  // apart from them.
  if (role != SpecRole::kContext) {
    for (const CompiledFeature& f : out) {
      if (f.kind != FeatureKind::kVarLen) continue;
      const std::string lengths = f.key + std::string(kRowLengthsSuffix);
      if (seen.count(lengths) > 0) {
        return SpecError(lengths, "clashes with the row lengths of VarLen feature " +
                                      Quoted(f.key) + ", which are output as " + Quoted(lengths) +
                                      "; rename one of the two features");
      }
    }
  }
  return out;
}

std::vector<std::string> KeysOf(const std::vector<CompiledFeature>& features) {
  std::vector<std::string> keys;
  keys.reserve(features.size());
  for (const CompiledFeature& f : features) keys.push_back(f.key);
  return keys;
}

std::string Where::ToString() const {
  std::string s = std::string(what) + " " + Quoted(key);
  if (step >= 0) s += " step " + std::to_string(step);
  if (batch_index >= 0) s += " in example " + std::to_string(batch_index) + " of the batch";
  return s;
}

Status MissingFeatureError(const Where& where, const CompiledFeature& f) {
  std::string shape = f.kind == FeatureKind::kFixedLen
                          ? f.shape.ToString()
                          : f.shape.Prepend(Shape::kUnknownDim).ToString();
  const char* why = f.kind == FeatureKind::kFixedLen ? "the spec gives no default value"
                                                     : "allow_missing is false";
  return Status::InvalidArgument(where.ToString() + " (data type: " + DTypeText(f.dtype) +
                                 ", shape " + shape + ") is required but could not be found, and " +
                                 why);
}

Status DTypeMismatchError(const Where& where, const CompiledFeature& f, ValueKind found) {
  return Status::InvalidArgument(
      where.ToString() + ": data types don't match: expected " + DTypeText(f.dtype) + " (" +
      std::string(ValueKindName(f.value_kind)) + ") but found " +
      DTypeText(DTypeOfValueKind(found)) + " (" + std::string(ValueKindName(found)) + ")");
}

Status ValueCountError(const Where& where, const CompiledFeature& f, uint64_t found) {
  const bool item = f.kind == FeatureKind::kFixedLenSequence;
  return Status::InvalidArgument(where.ToString() + ": expected " + std::to_string(f.elements) +
                                 " " + DTypeText(f.dtype) + " values for " +
                                 (item ? "item shape " : "shape ") + f.shape.ToString() +
                                 ", found " + std::to_string(found));
}

Status NotMultipleError(const Where& where, const CompiledFeature& f, uint64_t found) {
  return Status::InvalidArgument(where.ToString() + ": found " + std::to_string(found) + " " +
                                 DTypeText(f.dtype) + " values, not a multiple of " +
                                 std::to_string(f.elements) + " (item shape " + f.shape.ToString() +
                                 ", output shape " +
                                 f.shape.Prepend(Shape::kUnknownDim).ToString() + ")");
}

Status MalformedError(std::string_view message, const uint8_t* begin, const WireError& err) {
  return Status::DataLoss("malformed " + std::string(message) + " at byte " +
                          std::to_string(err.at - begin) + ": " + DescribeWireError(err));
}

Status CheckFeatureValueSlow(const CompiledFeature& f, const FeatureValue& v, const Where& where,
                             uint64_t* items) {
  if (v.kind == ValueKind::kNone) {
    if (f.kind == FeatureKind::kFixedLen && !f.default_value) return MissingFeatureError(where, f);
    *items = 0;
    return Status::OK();
  }
  if (v.kind != f.value_kind) return DTypeMismatchError(where, f, v.kind);
  switch (f.kind) {
    case FeatureKind::kFixedLen:
      if (v.count != static_cast<uint64_t>(f.elements)) return ValueCountError(where, f, v.count);
      *items = 1;
      break;
    case FeatureKind::kVarLen: *items = v.count; break;
    case FeatureKind::kFixedLenSequence:
      if (v.count % static_cast<uint64_t>(f.elements) != 0) {
        return NotMultipleError(where, f, v.count);
      }
      *items = v.count / static_cast<uint64_t>(f.elements);
      break;
    case FeatureKind::kSparse:
    case FeatureKind::kRagged: return Status::Internal("composite feature compiled as raw");
  }
  return Status::OK();
}

uint64_t WriteFeatureValues(const CompiledFeature& f, const FeatureValue& v, const ByteSpan* more,
                            void* out) {
  if (v.kind == ValueKind::kNone) {
    if (f.kind != FeatureKind::kFixedLen) return 0;
    const Tensor& d = *f.default_value;
    if (f.dtype == DType::kString) {
      const auto src = d.flat<std::string_view>();
      std::copy(src.begin(), src.end(), static_cast<std::string_view*>(out));
    } else if (d.byte_size() > 0) {
      std::memcpy(out, d.raw_data(), d.byte_size());
    }
    return static_cast<uint64_t>(f.elements);
  }
  switch (f.value_kind) {
    case ValueKind::kInt64: CopyInt64Values(v, more, static_cast<int64_t*>(out)); break;
    case ValueKind::kFloat: CopyFloatValues(v, more, static_cast<float*>(out)); break;
    case ValueKind::kBytes: CopyBytesValues(v, more, static_cast<std::string_view*>(out)); break;
    case ValueKind::kNone: break;
  }
  return v.count;
}

void WritePadding(const CompiledFeature& f, void* out, uint64_t n) {
  if (n == 0) return;
  switch (f.dtype) {
    case DType::kInt64: {
      const int64_t pad = f.default_value ? f.default_value->scalar<int64_t>() : 0;
      std::fill_n(static_cast<int64_t*>(out), n, pad);
      break;
    }
    case DType::kFloat32: {
      const float pad = f.default_value ? f.default_value->scalar<float>() : 0.0f;
      std::fill_n(static_cast<float*>(out), n, pad);
      break;
    }
    default: {
      const std::string_view pad =
          f.default_value ? f.default_value->scalar<std::string_view>() : std::string_view();
      std::fill_n(static_cast<std::string_view*>(out), n, pad);
      break;
    }
  }
}

void AddDefaultOwners(const CompiledFeature& f, Tensor* t) {
  if (!f.default_value || f.dtype != DType::kString) return;
  for (const Buffer& b : f.default_value->string_owners()) t->AddStringOwner(b);
}

Status CheckOwner(std::string_view serialized, const Buffer& owner, std::string_view what) {
  if (!owner || serialized.empty()) return Status::OK();
  const auto p = reinterpret_cast<uintptr_t>(serialized.data());
  const auto b = reinterpret_cast<uintptr_t>(owner.data());
  if (p < b || p - b > owner.size() || serialized.size() > owner.size() - (p - b)) {
    return Status::InvalidArgument(
        "the serialized " + std::string(what) + " (" + std::to_string(serialized.size()) +
        " bytes) does not lie inside its owner Buffer (" + std::to_string(owner.size()) +
        " bytes); pass the Buffer that holds the bytes, or none to have strings copied");
  }
  return Status::OK();
}

Status CopyStringsToOwnedBuffer(std::vector<Tensor>& tensors) {
  size_t total = 0;
  for (const Tensor& t : tensors) {
    if (t.dtype() != DType::kString) continue;
    for (std::string_view s : t.flat<std::string_view>()) total += s.size();
  }
  Buffer bytes;
  if (total > 0) {
    SLUICE_ASSIGN_OR_RETURN(bytes, Buffer::Allocate(total));
  }
  char* dst = reinterpret_cast<char*>(bytes.data());
  for (Tensor& t : tensors) {
    if (t.dtype() != DType::kString) continue;
    for (std::string_view& s : t.flat<std::string_view>()) {
      if (s.empty()) {
        s = std::string_view();
        continue;
      }
      std::memcpy(dst, s.data(), s.size());
      s = std::string_view(dst, s.size());
      dst += s.size();
    }
    t.AddStringOwner(bytes);
  }
  return Status::OK();
}

}  // namespace sluice::records_internal
