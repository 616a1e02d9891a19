#include "example_reference.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace sluice::testing {
namespace {

using proto::Feature;

// One feature's values as protobuf sees them.
struct Values {
  bool present = false;  // a Feature with a kind
  Feature::KindCase kind = Feature::KIND_NOT_SET;
  std::vector<int64_t> i64;
  std::vector<float> f32;
  std::vector<std::string_view> bytes;
  size_t size() const {
    return kind == Feature::kInt64List   ? i64.size()
           : kind == Feature::kFloatList ? f32.size()
                                         : bytes.size();
  }
};

Feature::KindCase KindOf(DType dtype) {
  switch (dtype) {
    case DType::kInt64: return Feature::kInt64List;
    case DType::kFloat32: return Feature::kFloatList;
    default: return Feature::kBytesList;
  }
}

Values ValuesOf(const Feature* f) {
  Values v;
  if (f == nullptr || f->kind_case() == Feature::KIND_NOT_SET) return v;
  v.present = true;
  v.kind = f->kind_case();
  switch (v.kind) {
    case Feature::kInt64List:
      v.i64.assign(f->int64_list().value().begin(), f->int64_list().value().end());
      break;
    case Feature::kFloatList:
      v.f32.assign(f->float_list().value().begin(), f->float_list().value().end());
      break;
    case Feature::kBytesList:
      for (const std::string& s : f->bytes_list().value()) v.bytes.push_back(s);
      break;
    default: break;
  }
  return v;
}

const Feature* Find(const proto::Features& features, const std::string& key) {
  auto it = features.feature().find(key);
  return it == features.feature().end() ? nullptr : &it->second;
}

std::string Where(std::string_view what, const std::string& key, int64_t example, int64_t step) {
  std::string s = std::string(what) + " '" + key + "'";
  if (step >= 0) s += " step " + std::to_string(step);
  if (example >= 0) s += " in example " + std::to_string(example) + " of the batch";
  return s;
}

// Appends n values of the spec's padding / default to `out`.
void AppendDefault(const FeatureSpec& s, size_t n, Values* out) {
  const Tensor* d = s.default_value ? &*s.default_value : nullptr;
  for (size_t i = 0; i < n; ++i) {
    const size_t j = d == nullptr ? 0 : (d->num_elements() == 1 ? 0 : i);
    switch (s.dtype) {
      case DType::kInt64: out->i64.push_back(d ? d->flat<int64_t>()[j] : 0); break;
      case DType::kFloat32: out->f32.push_back(d ? d->flat<float>()[j] : 0.0f); break;
      default: out->bytes.push_back(d ? d->flat<std::string_view>()[j] : std::string_view()); break;
    }
  }
}

void AppendValues(const Values& from, Values* to) {
  to->i64.insert(to->i64.end(), from.i64.begin(), from.i64.end());
  to->f32.insert(to->f32.end(), from.f32.begin(), from.f32.end());
  to->bytes.insert(to->bytes.end(), from.bytes.begin(), from.bytes.end());
}

int64_t Count(DType dtype, const Values& v) {
  switch (dtype) {
    case DType::kInt64: return static_cast<int64_t>(v.i64.size());
    case DType::kFloat32: return static_cast<int64_t>(v.f32.size());
    default: return static_cast<int64_t>(v.bytes.size());
  }
}

Result<Tensor> MakeTensor(DType dtype, const Values& v, const Shape& shape) {
  switch (dtype) {
    case DType::kInt64: return Tensor::FromVector<int64_t>(v.i64, shape);
    case DType::kFloat32: return Tensor::FromVector<float>(v.f32, shape);
    default: return Tensor::FromStrings(v.bytes, shape);
  }
}

// Checks one feature of one example. On success, *items is the number of
// values (VarLen) or items (FixedLenSequence); *out holds the values (for an
// absent FixedLen feature: its default).
Status CheckOne(const std::string& key, const FeatureSpec& s, const Feature* feature,
                std::string_view what, int64_t example, Values* out, size_t* items) {
  *out = ValuesOf(feature);
  const std::string where = Where(what, key, example, -1);
  if (!out->present) {
    *items = 0;
    if (s.kind == FeatureKind::kFixedLen) {
      if (!s.default_value) {
        return Status::InvalidArgument(where + " (reference): required feature missing");
      }
      AppendDefault(s, static_cast<size_t>(s.shape.num_elements()), out);
    }
    return Status::OK();
  }
  if (out->kind != KindOf(s.dtype)) {
    return Status::InvalidArgument(where + ": (reference) wrong kind");
  }
  const size_t n = out->size();
  switch (s.kind) {
    case FeatureKind::kFixedLen:
      if (n != static_cast<size_t>(s.shape.num_elements())) {
        return Status::InvalidArgument(where + ": (reference) wrong count");
      }
      *items = 1;
      break;
    case FeatureKind::kVarLen: *items = n; break;
    case FeatureKind::kFixedLenSequence: {
      const auto item = static_cast<size_t>(s.shape.num_elements());
      if (n % item != 0) return Status::InvalidArgument(where + ": (reference) not a multiple");
      *items = n / item;
      break;
    }
    default: return Status::InvalidArgument("(reference) composite features are not modelled");
  }
  return Status::OK();
}

// The text that names the failing feature: everything before ": " or " (".
std::string Locus(std::string_view message) {
  const size_t quote = message.find('\'');
  if (quote == std::string_view::npos) return std::string(message);
  const size_t close = message.find('\'', quote + 1);
  const size_t from = close == std::string_view::npos ? quote : close;
  const size_t a = message.find(": ", from), b = message.find(" (", from);
  return std::string(message.substr(0, std::min(a, b)));
}

std::string CompareStatus(const Status& fast, const Status& ref) {
  if (fast.code() != ref.code()) {
    return "fast: " + fast.ToString() + "\nreference: " + ref.ToString();
  }
  if (Locus(fast.message()) != Locus(ref.message())) {
    return "errors name different features\nfast: " + fast.ToString() +
           "\nreference: " + ref.ToString();
  }
  return "";
}

}  // namespace

Result<Element> ReferenceParseSingle(const proto::Example& example, const ParseSpec& spec) {
  Element out;
  for (const auto& [key, s] : spec) {
    Values v;
    size_t items = 0;
    SLUICE_RETURN_IF_ERROR(
        CheckOne(key, s, Find(example.features(), key), "feature", -1, &v, &items));
    Shape shape;
    switch (s.kind) {
      case FeatureKind::kFixedLen: shape = s.shape; break;
      case FeatureKind::kVarLen: shape = Shape{static_cast<int64_t>(items)}; break;
      case FeatureKind::kFixedLenSequence:
        shape = s.shape.Prepend(static_cast<int64_t>(items));
        break;
      default: return Status::InvalidArgument("(reference) composite features are not modelled");
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor t, MakeTensor(s.dtype, v, shape));
    out.push_back(std::move(t), key);
  }
  return out;
}

Result<Element> ReferenceParseBatch(std::span<const proto::Example> examples,
                                    const ParseSpec& spec) {
  const size_t nf = spec.size();
  const int64_t batch = static_cast<int64_t>(examples.size());
  std::vector<std::vector<Values>> values(examples.size(), std::vector<Values>(nf));
  std::vector<std::vector<size_t>> items(examples.size(), std::vector<size_t>(nf));
  for (size_t r = 0; r < examples.size(); ++r) {
    for (size_t i = 0; i < nf; ++i) {
      const auto& [key, s] = spec[i];
      SLUICE_RETURN_IF_ERROR(CheckOne(key, s, Find(examples[r].features(), key), "feature",
                                      static_cast<int64_t>(r), &values[r][i], &items[r][i]));
    }
  }
  Element out;
  for (size_t i = 0; i < nf; ++i) {
    const auto& [key, s] = spec[i];
    Values all;
    switch (s.kind) {
      case FeatureKind::kFixedLen: {
        for (size_t r = 0; r < examples.size(); ++r) AppendValues(values[r][i], &all);
        SLUICE_ASSIGN_OR_RETURN(Tensor t, MakeTensor(s.dtype, all, s.shape.Prepend(batch)));
        out.push_back(std::move(t), key);
        break;
      }
      case FeatureKind::kVarLen: {
        std::vector<int64_t> lengths;
        for (size_t r = 0; r < examples.size(); ++r) {
          AppendValues(values[r][i], &all);
          lengths.push_back(static_cast<int64_t>(items[r][i]));
        }
        SLUICE_ASSIGN_OR_RETURN(Tensor t, MakeTensor(s.dtype, all, Shape{Count(s.dtype, all)}));
        out.push_back(std::move(t), key);
        SLUICE_ASSIGN_OR_RETURN(Tensor l, Tensor::FromVector(lengths));
        out.push_back(std::move(l), key + ".row_lengths");
        break;
      }
      case FeatureKind::kFixedLenSequence: {
        size_t max_items = 0;
        for (size_t r = 0; r < examples.size(); ++r) max_items = std::max(max_items, items[r][i]);
        const auto item = static_cast<size_t>(s.shape.num_elements());
        for (size_t r = 0; r < examples.size(); ++r) {
          AppendValues(values[r][i], &all);
          AppendDefault(s, (max_items - items[r][i]) * item, &all);
        }
        SLUICE_ASSIGN_OR_RETURN(
            Tensor t, MakeTensor(s.dtype, all,
                                 s.shape.Prepend(static_cast<int64_t>(max_items)).Prepend(batch)));
        out.push_back(std::move(t), key);
        break;
      }
      default: return Status::InvalidArgument("(reference) composite features are not modelled");
    }
  }
  return out;
}

Result<ParsedSequenceExample> ReferenceParseSequence(const proto::SequenceExample& example,
                                                     const ParseSpec& context_spec,
                                                     const ParseSpec& sequence_spec) {
  ParsedSequenceExample out;
  for (const auto& [key, s] : context_spec) {
    Values v;
    size_t items = 0;
    SLUICE_RETURN_IF_ERROR(
        CheckOne(key, s, Find(example.context(), key), "context feature", -1, &v, &items));
    const Shape shape =
        s.kind == FeatureKind::kFixedLen ? s.shape : Shape{static_cast<int64_t>(items)};
    SLUICE_ASSIGN_OR_RETURN(Tensor t, MakeTensor(s.dtype, v, shape));
    out.context.push_back(std::move(t), key);
  }
  for (const auto& [key, s] : sequence_spec) {
    const auto& lists = example.feature_lists().feature_list();
    auto it = lists.find(key);
    Values all;
    std::vector<int64_t> lengths;
    if (it == lists.end()) {
      if (s.kind == FeatureKind::kFixedLenSequence && !s.allow_missing) {
        return Status::InvalidArgument(Where("feature list", key, -1, -1) +
                                       " (reference): required feature list missing");
      }
    } else {
      for (int step = 0; step < it->second.feature_size(); ++step) {
        const Values v = ValuesOf(&it->second.feature(step));
        const std::string where = Where("feature list", key, -1, step);
        if (v.present && v.kind != KindOf(s.dtype)) {
          return Status::InvalidArgument(where + ": (reference) wrong kind");
        }
        const size_t n = v.present ? v.size() : 0;
        if (s.kind == FeatureKind::kFixedLenSequence &&
            n != static_cast<size_t>(s.shape.num_elements())) {
          return Status::InvalidArgument(where + ": (reference) wrong count");
        }
        AppendValues(v, &all);
        lengths.push_back(static_cast<int64_t>(n));
      }
    }
    const auto steps = static_cast<int64_t>(lengths.size());
    const int64_t total = Count(s.dtype, all);
    if (s.kind == FeatureKind::kFixedLenSequence) {
      SLUICE_ASSIGN_OR_RETURN(Tensor t, MakeTensor(s.dtype, all, s.shape.Prepend(steps)));
      out.feature_lists.push_back(std::move(t), key);
    } else {
      SLUICE_ASSIGN_OR_RETURN(Tensor t, MakeTensor(s.dtype, all, Shape{total}));
      out.feature_lists.push_back(std::move(t), key);
      SLUICE_ASSIGN_OR_RETURN(Tensor l, Tensor::FromVector(lengths));
      out.feature_lists.push_back(std::move(l), key + ".row_lengths");
    }
  }
  return out;
}

std::string DescribeDifference(const Element& a, const Element& b) {
  if (a.size() != b.size()) {
    return "component counts differ: " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size()) + "\n" + a.DebugString() + "\n" + b.DebugString();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.names()[i] != b.names()[i]) {
      return "component " + std::to_string(i) + " named '" + a.names()[i] + "' vs '" +
             b.names()[i] + "'";
    }
    if (!Identical(a[i], b[i])) {
      return "component '" + a.names()[i] + "' differs:\n  " + a[i].DebugString(64) + "\n  " +
             b[i].DebugString(64);
    }
  }
  return "";
}

std::string CompareWithReference(const Result<Element>& fast, const Result<Element>& reference) {
  if (fast.ok() != reference.ok()) {
    return "fast: " + (fast.ok() ? fast->DebugString() : fast.status().ToString()) +
           "\nreference: " +
           (reference.ok() ? reference->DebugString() : reference.status().ToString());
  }
  if (!fast.ok()) return CompareStatus(fast.status(), reference.status());
  return DescribeDifference(*fast, *reference);
}

std::string CompareWithReference(const Result<ParsedSequenceExample>& fast,
                                 const Result<ParsedSequenceExample>& reference) {
  if (fast.ok() != reference.ok()) {
    return "fast: " + (fast.ok() ? std::string("OK") : fast.status().ToString()) +
           "\nreference: " + (reference.ok() ? std::string("OK") : reference.status().ToString());
  }
  if (!fast.ok()) return CompareStatus(fast.status(), reference.status());
  std::string d = DescribeDifference(fast->context, reference->context);
  if (!d.empty()) return "context: " + d;
  d = DescribeDifference(fast->feature_lists, reference->feature_lists);
  if (!d.empty()) return "feature_lists: " + d;
  return "";
}

}  // namespace sluice::testing
