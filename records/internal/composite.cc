#include "sluice/records/internal/composite.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "sluice/records/internal/feature_walk.h"

namespace sluice::records_internal {
namespace {

using PartKind = RaggedPartition::Kind;

// Empty rows a ValueRowIds partition may imply beyond its values: a row id
// of 10^15 would otherwise ask for petabytes of row splits.
constexpr int64_t kMaxEmptyRows = int64_t{1} << 24;

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

Status SpecError(std::string_view key, const std::string& message) {
  return Status::InvalidArgument("parse spec: feature " + Quoted(key) + ": " + message);
}

// "SparseFeature 'k'" or "RaggedFeature 'k' in example 3 of the batch".
std::string Where(const CompositePlan::Output& o, int64_t row) {
  std::string s = std::string(FeatureKindName(o.kind)) + " " + Quoted(o.key);
  if (row >= 0) {
    s += o.steps ? " step " + std::to_string(row)
                 : " in example " + std::to_string(row) + " of the batch";
  }
  return s;
}

Status DataError(const CompositePlan::Output& o, int64_t row, const std::string& message) {
  return Status::InvalidArgument(Where(o, row) + ": " + message);
}

std::string PartName(const CompositePlan::Part& p) {
  std::string s(RaggedPartitionName(p.kind));
  if (p.kind == PartKind::kUniformRowLength) return s + "(" + std::to_string(p.length) + ")";
  return s + "(" + Quoted(p.key) + ")";
}

Status CheckSparseSpec(const std::string& key, const FeatureSpec& s) {
  if (ValueKindOf(s.dtype) == ValueKind::kNone) {
    return SpecError(key, "SparseFeature dtype " + std::string(DTypeName(s.dtype)) +
                              " is not supported; features hold int64, float32 or string values");
  }
  if (s.index_keys.empty()) return SpecError(key, "SparseFeature needs at least one index_key");
  if (s.size.size() != s.index_keys.size()) {
    return SpecError(key, "SparseFeature has " + std::to_string(s.index_keys.size()) +
                              " index keys but " + std::to_string(s.size.size()) +
                              " sizes; give one size per index key");
  }
  for (int64_t d : s.size) {
    if (d < 0) return SpecError(key, "SparseFeature size " + std::to_string(d) + " is negative");
  }
  if (s.value_key.empty()) return SpecError(key, "SparseFeature needs a value_key");
  if (s.default_value || s.shape.rank() != 0 || s.allow_missing) {
    return SpecError(key, "SparseFeature takes no shape, default value or allow_missing");
  }
  return Status::OK();
}

Status CheckRaggedSpec(const std::string& key, const FeatureSpec& s) {
  if (ValueKindOf(s.dtype) == ValueKind::kNone) {
    return SpecError(key, "RaggedFeature dtype " + std::string(DTypeName(s.dtype)) +
                              " is not supported; features hold int64, float32 or string values");
  }
  if (s.row_splits_dtype != DType::kInt64 && s.row_splits_dtype != DType::kInt32) {
    return SpecError(key, "RaggedFeature row_splits_dtype must be int32 or int64, got " +
                              std::string(DTypeName(s.row_splits_dtype)));
  }
  for (const RaggedPartition& p : s.partitions) {
    if (p.kind == PartKind::kUniformRowLength) {
      if (p.length < 1) {
        return SpecError(key, "RaggedFeature UniformRowLength(" + std::to_string(p.length) +
                                  ") must be at least 1");
      }
    } else if (p.key.empty()) {
      return SpecError(key, "RaggedFeature partition " + std::string(RaggedPartitionName(p.kind)) +
                                " needs a feature key");
    }
  }
  if (s.default_value || s.shape.rank() != 0 || s.allow_missing || !s.index_keys.empty() ||
      !s.size.empty()) {
    return SpecError(key,
                     "RaggedFeature takes no shape, default value, allow_missing, index keys or "
                     "size");
  }
  return Status::OK();
}

// The int64 view of a raw VarLen output.
std::span<const int64_t> Ints(const Tensor& t) { return t.flat<int64_t>(); }

// Row ranges of a raw batch VarLen output: begin of each row, from its
// row lengths.
std::vector<int64_t> RowStartsOf(const Tensor& lengths) {
  std::span<const int64_t> l = Ints(lengths);
  std::vector<int64_t> starts(l.size() + 1, 0);
  for (size_t r = 0; r < l.size(); ++r) starts[r + 1] = starts[r] + l[r];
  return starts;
}

// Elements [begin, begin + n) of `t` gathered in the order of `perm`
// (indices relative to begin), into a new tensor with t's string owners.
Result<Tensor> Gather(const Tensor& t, const std::vector<int64_t>& perm) {
  SLUICE_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::Allocate(t.dtype(), Shape{static_cast<int64_t>(perm.size())}));
  const size_t es = DTypeSize(t.dtype());
  const auto* src = static_cast<const char*>(t.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < perm.size(); ++i) {
    std::memcpy(dst + i * es, src + static_cast<size_t>(perm[i]) * es, es);
  }
  for (const Buffer& b : t.string_owners()) out.AddStringOwner(b);
  return out;
}

// --- SparseFeature -------------------------------------------------------------

// One example's sparse entries: checks counts, ranges and order, and
// appends the entries' positions (into the value feature's values, from
// `begin`) to *perm in sorted order and their index tuples to *indices
// (prefixed by `row` when row >= 0).
Status SparseRow(const CompositePlan::Output& o, const std::vector<std::span<const int64_t>>& ids,
                 int64_t begin, int64_t n, int64_t row, std::vector<int64_t>* perm,
                 std::vector<int64_t>* indices) {
  const size_t rank = ids.size();
  for (size_t j = 0; j < rank; ++j) {
    if (static_cast<int64_t>(ids[j].size()) != n) {
      return DataError(o, row,
                       "index feature " + Quoted(o.index_keys[j]) + " has " +
                           std::to_string(ids[j].size()) + " values but value feature " +
                           Quoted(o.value_key) + " has " + std::to_string(n) +
                           "; they must have one index per value");
    }
    for (size_t i = 0; i < ids[j].size(); ++i) {
      const int64_t x = ids[j][i];
      if (x < 0 || x >= o.size[j]) {
        return DataError(o, row,
                         "index " + std::to_string(x) + " (value " + std::to_string(i) +
                             ") of index feature " + Quoted(o.index_keys[j]) +
                             " is out of range [0, " + std::to_string(o.size[j]) + ")");
      }
    }
  }
  auto less = [&](int64_t a, int64_t b) {
    for (size_t j = 0; j < rank; ++j) {
      if (ids[j][a] != ids[j][b]) return ids[j][a] < ids[j][b];
    }
    return false;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (o.already_sorted) {
    for (int64_t i = 1; i < n; ++i) {
      if (less(i, i - 1)) {
        return DataError(o, row,
                         "already_sorted is set but the indices are not sorted (value " +
                             std::to_string(i) + " comes before value " + std::to_string(i - 1) +
                             ")");
      }
    }
  } else {
    std::stable_sort(order.begin(), order.end(), less);
  }
  for (int64_t i : order) {
    perm->push_back(begin + i);
    if (row >= 0) indices->push_back(row);
    for (size_t j = 0; j < rank; ++j) indices->push_back(ids[j][static_cast<size_t>(i)]);
  }
  return Status::OK();
}

Status AddSparse(const CompositePlan::Output& o, const Tensor& values,
                 const std::vector<int64_t>& perm, std::vector<int64_t>& indices,
                 std::vector<int64_t> dense_shape, std::vector<Tensor>* out) {
  const auto nnz = static_cast<int64_t>(perm.size());
  const auto cols = static_cast<int64_t>(dense_shape.size());
  SLUICE_ASSIGN_OR_RETURN(Tensor idx, Tensor::FromVector<int64_t>(indices, Shape{nnz, cols}));
  out->push_back(std::move(idx));
  bool identity = true;
  for (int64_t i = 0; i < nnz && identity; ++i) identity = perm[static_cast<size_t>(i)] == i;
  if (identity && values.num_elements() == nnz) {
    out->push_back(values);
  } else {
    SLUICE_ASSIGN_OR_RETURN(Tensor v, Gather(values, perm));
    out->push_back(std::move(v));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor shape, Tensor::FromVector<int64_t>(dense_shape));
  out->push_back(std::move(shape));
  (void)o;
  return Status::OK();
}

// --- RaggedFeature -------------------------------------------------------------

// The row splits of one partition over `n` values (or rows): *rows gets the
// number of rows it makes. Every partition is validated (tf.io does so only
// with validate=True).
Status PartitionSplits(const CompositePlan::Output& o, const CompositePlan::Part& p,
                       std::span<const int64_t> v, int64_t n, int64_t row,
                       std::vector<int64_t>* s) {
  const std::string what = "partition " + PartName(p);
  auto bad = [&](const std::string& m) { return DataError(o, row, what + " " + m); };
  auto check_sorted = [&](std::string_view name) -> Status {
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i] < v[i - 1]) {
        return bad("is not sorted: " + std::string(name) + " " + std::to_string(v[i]) +
                   " follows " + std::to_string(v[i - 1]));
      }
    }
    return Status::OK();
  };
  s->clear();
  switch (p.kind) {
    case PartKind::kRowSplits:
      if (v.empty()) return bad("is empty; row splits start with 0");
      if (v[0] != 0) return bad("starts at " + std::to_string(v[0]) + ", not 0");
      SLUICE_RETURN_IF_ERROR(check_sorted("split"));
      if (v.back() != n) {
        return bad("ends at " + std::to_string(v.back()) + " but there are " + std::to_string(n) +
                   " values");
      }
      s->assign(v.begin(), v.end());
      return Status::OK();
    case PartKind::kRowLengths: {
      int64_t total = 0;
      for (int64_t len : v) {
        if (len < 0) return bad("has a negative row length " + std::to_string(len));
        // total <= n, so this cannot overflow before it passes n.
        if (total <= n) total += std::min(len, n + 1);
      }
      if (total != n) {
        return bad("has row lengths summing to " +
                   (total > n ? "more than " + std::to_string(n) : std::to_string(total)) +
                   " but there are " + std::to_string(n) + " values");
      }
      s->reserve(v.size() + 1);
      s->push_back(0);
      for (int64_t len : v) s->push_back(s->back() + len);
      return Status::OK();
    }
    case PartKind::kRowStarts:
      if (!v.empty() && v[0] != 0) return bad("starts at " + std::to_string(v[0]) + ", not 0");
      if (v.empty() && n != 0) {
        return bad("is empty but there are " + std::to_string(n) + " values");
      }
      SLUICE_RETURN_IF_ERROR(check_sorted("start"));
      if (!v.empty() && v.back() > n) {
        return bad("has start " + std::to_string(v.back()) + " past the " + std::to_string(n) +
                   " values");
      }
      s->assign(v.begin(), v.end());
      s->push_back(n);
      if (v.empty()) s->front() = 0;
      return Status::OK();
    case PartKind::kRowLimits:
      if (!v.empty() && v[0] < 0) return bad("has a negative limit " + std::to_string(v[0]));
      SLUICE_RETURN_IF_ERROR(check_sorted("limit"));
      if ((v.empty() ? 0 : v.back()) != n) {
        return bad("ends at " + std::to_string(v.empty() ? 0 : v.back()) + " but there are " +
                   std::to_string(n) + " values");
      }
      s->push_back(0);
      s->insert(s->end(), v.begin(), v.end());
      return Status::OK();
    case PartKind::kValueRowIds: {
      if (static_cast<int64_t>(v.size()) != n) {
        return bad("has " + std::to_string(v.size()) + " row ids but there are " +
                   std::to_string(n) + " values; give one row id per value");
      }
      if (!v.empty() && v[0] < 0) return bad("has a negative row id " + std::to_string(v[0]));
      SLUICE_RETURN_IF_ERROR(check_sorted("row id"));
      const int64_t rows = v.empty() ? 0 : v.back() + 1;
      if (rows - n > kMaxEmptyRows) {
        return Status::ResourceExhausted(
            Where(o, row) + ": " + what + " has row id " + std::to_string(rows - 1) +
            ", more than " + std::to_string(kMaxEmptyRows) + " empty rows beyond its values");
      }
      s->assign(static_cast<size_t>(rows) + 1, 0);
      size_t i = 0;
      for (int64_t r = 0; r <= rows; ++r) {
        while (i < v.size() && v[i] < r) ++i;
        (*s)[static_cast<size_t>(r)] = static_cast<int64_t>(i);
      }
      return Status::OK();
    }
    case PartKind::kUniformRowLength: {
      if (n % p.length != 0) {
        return bad("does not divide the " + std::to_string(n) + " values (or rows) evenly");
      }
      const int64_t rows = n / p.length;
      s->resize(static_cast<size_t>(rows) + 1);
      for (int64_t r = 0; r <= rows; ++r) (*s)[static_cast<size_t>(r)] = r * p.length;
      return Status::OK();
    }
  }
  return Status::Internal("unknown partition kind");
}

// One example's ragged dimensions, outermost first, over n values; *rows
// gets its number of top-level rows and *dense its trailing uniform dims.
Status RaggedRow(const CompositePlan::Output& o, const std::vector<std::span<const int64_t>>& parts,
                 int64_t n, int64_t row, std::vector<std::vector<int64_t>>* splits, int64_t* rows) {
  int64_t cur = n;
  for (size_t i = o.parts.size(); i > o.dense_from; --i) {
    const CompositePlan::Part& p = o.parts[i - 1];
    if (cur % p.length != 0) {
      return DataError(o, row,
                       "partition " + PartName(p) + " does not divide the " + std::to_string(cur) +
                           " values evenly");
    }
    cur /= p.length;
  }
  if (splits->size() < o.dense_from) splits->resize(o.dense_from);
  for (size_t i = o.dense_from; i > 0; --i) {
    std::vector<int64_t>& s = (*splits)[i - 1];
    SLUICE_RETURN_IF_ERROR(PartitionSplits(o, o.parts[i - 1], parts[i - 1], cur, row, &s));
    cur = static_cast<int64_t>(s.size()) - 1;
  }
  *rows = cur;
  return Status::OK();
}

Result<Tensor> SplitsTensor(const CompositePlan::Output& o, const std::vector<int64_t>& s) {
  SLUICE_ASSIGN_OR_RETURN(Tensor t,
                          Tensor::Allocate(o.splits_dtype, Shape{static_cast<int64_t>(s.size())}));
  if (o.splits_dtype == DType::kInt64) {
    std::copy(s.begin(), s.end(), t.flat<int64_t>().begin());
    return t;
  }
  if (!s.empty() && s.back() > std::numeric_limits<int32_t>::max()) {
    return Status::InvalidArgument(Where(o, -1) + ": row split " + std::to_string(s.back()) +
                                   " does not fit row_splits_dtype int32");
  }
  std::copy(s.begin(), s.end(), t.flat<int32_t>().begin());
  return t;
}

// The flat values with the dense uniform dims split off.
Result<Tensor> FlatValues(const CompositePlan::Output& o, const Tensor& values) {
  if (o.dense_from == o.parts.size()) return values;
  int64_t inner = 1;
  for (size_t i = o.dense_from; i < o.parts.size(); ++i) inner *= o.parts[i].length;
  Shape shape{values.num_elements() / inner};
  for (size_t i = o.dense_from; i < o.parts.size(); ++i) {
    shape.AppendDim(o.parts[i].length);
  }
  return values.Reshape(shape);
}

// Per-thread scratch for one example's partitions and splits, so that the
// assembly allocates only its output tensors.
struct Scratch {
  std::vector<std::span<const int64_t>> parts;
  std::vector<std::vector<int64_t>> splits;
};
Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

Result<std::shared_ptr<const CompositePlan>> PlanComposite(const ParseSpec& spec, bool sequence) {
  bool any = false;
  for (const auto& [key, s] : spec) {
    any = any || s.kind == FeatureKind::kSparse || s.kind == FeatureKind::kRagged;
  }
  if (!any) return std::shared_ptr<const CompositePlan>();
  auto plan = std::make_shared<CompositePlan>();
  std::unordered_map<std::string, size_t> raw_index;
  // Plain features first, as declared.
  for (const auto& [key, s] : spec) {
    if (s.kind == FeatureKind::kSparse || s.kind == FeatureKind::kRagged) continue;
    if (!raw_index.emplace(key, plan->raw_spec.size()).second) {
      return Status::InvalidArgument("parse spec: duplicate feature key " + Quoted(key));
    }
    plan->raw_spec.emplace_back(key, s);
  }
  // The keys composite features read, as int64 / dtype VarLen features.
  auto need = [&](const std::string& owner, const std::string& key, DType dtype,
                  std::string_view role) -> Result<size_t> {
    auto it = raw_index.find(key);
    if (it == raw_index.end()) {
      raw_index.emplace(key, plan->raw_spec.size());
      plan->raw_spec.emplace_back(key, VarLenFeature(dtype));
      return plan->raw_spec.size() - 1;
    }
    const FeatureSpec& s = plan->raw_spec[it->second].second;
    if (s.kind != FeatureKind::kVarLen || s.dtype != dtype) {
      return SpecError(owner, "reads " + Quoted(key) + " as its " + std::string(role) + " (" +
                                  std::string(DTypeName(dtype)) +
                                  " values), but the spec also declares " + Quoted(key) + " as " +
                                  std::string(FeatureKindName(s.kind)) + " of " +
                                  std::string(DTypeName(s.dtype)));
    }
    return it->second;
  };
  std::unordered_set<std::string> seen_keys;
  for (const auto& [key, s] : spec) {
    if (!seen_keys.insert(key).second) {
      return Status::InvalidArgument("parse spec: duplicate feature key " + Quoted(key));
    }
    CompositePlan::Output o;
    o.key = key;
    o.kind = s.kind;
    o.dtype = s.dtype;
    o.steps = sequence;
    if (s.kind == FeatureKind::kSparse && sequence) {
      return SpecError(key, "a SequenceExample's sequence spec takes no SparseFeature (as tf.io)");
    }
    if (s.kind == FeatureKind::kSparse) {
      SLUICE_RETURN_IF_ERROR(CheckSparseSpec(key, s));
      o.value_key = s.value_key;
      for (const std::string& ik : s.index_keys) {
        SLUICE_ASSIGN_OR_RETURN(size_t r, need(key, ik, DType::kInt64, "index"));
        o.index_raw.push_back(r);
      }
      o.index_keys = s.index_keys;
      o.size = s.size;
      o.already_sorted = s.already_sorted;
      SLUICE_ASSIGN_OR_RETURN(o.raw, need(key, s.value_key, s.dtype, "values"));
    } else if (s.kind == FeatureKind::kRagged) {
      SLUICE_RETURN_IF_ERROR(CheckRaggedSpec(key, s));
      o.value_key = s.value_key.empty() ? key : s.value_key;
      SLUICE_ASSIGN_OR_RETURN(o.raw, need(key, o.value_key, s.dtype, "values"));
      o.splits_dtype = s.row_splits_dtype;
      for (const RaggedPartition& rp : s.partitions) {
        CompositePlan::Part p{rp.kind, rp.key, 0, rp.length};
        if (rp.kind != PartKind::kUniformRowLength) {
          SLUICE_ASSIGN_OR_RETURN(p.raw, need(key, rp.key, DType::kInt64, "partition"));
        }
        o.parts.push_back(std::move(p));
      }
      o.dense_from = o.parts.size();
      while (o.dense_from > 0 && o.parts[o.dense_from - 1].kind == PartKind::kUniformRowLength) {
        --o.dense_from;
      }
    } else {
      o.raw = raw_index.at(key);
    }
    plan->outputs.push_back(std::move(o));
  }
  // Raw component positions.
  size_t single = 0;
  size_t batch = 0;
  for (const auto& [key, s] : plan->raw_spec) {
    plan->raw_single_pos.push_back(single++);
    plan->raw_batch_pos.push_back(batch);
    batch += s.kind == FeatureKind::kVarLen ? 2 : 1;
  }
  // Output names, which must be distinct.
  plan->single_names = std::make_shared<std::vector<std::string>>();
  plan->batch_names = std::make_shared<std::vector<std::string>>();
  for (const CompositePlan::Output& o : plan->outputs) {
    for (int batched = 0; batched < 2; ++batched) {
      std::vector<std::string>& names = batched ? *plan->batch_names : *plan->single_names;
      switch (o.kind) {
        case FeatureKind::kSparse:
          names.push_back(o.key + std::string(kIndicesSuffix));
          names.push_back(o.key);
          names.push_back(o.key + std::string(kDenseShapeSuffix));
          break;
        case FeatureKind::kRagged: {
          names.push_back(o.key);
          const size_t levels = o.dense_from + (batched ? 1 : 0);
          for (size_t i = 0; i < levels; ++i) {
            names.push_back(o.key + std::string(kRowSplitsSuffix) + std::to_string(i));
          }
          break;
        }
        default:
          names.push_back(o.key);
          if (batched && o.kind == FeatureKind::kVarLen) {
            names.push_back(o.key + std::string(kRowLengthsSuffix));
          }
      }
    }
  }
  for (const auto* names : {plan->single_names.get(), plan->batch_names.get()}) {
    std::unordered_set<std::string_view> distinct;
    for (const std::string& n : *names) {
      if (!distinct.insert(n).second) {
        return Status::InvalidArgument("parse spec: two outputs are named " + Quoted(n) +
                                       " (a SparseFeature or RaggedFeature output clashes with "
                                       "another feature); rename one of them");
      }
    }
  }
  return std::shared_ptr<const CompositePlan>(std::move(plan));
}

Result<Element> AssembleSingle(const CompositePlan& plan, const Element& raw) {
  std::vector<Tensor> out;
  out.reserve(plan.single_names->size());
  for (const CompositePlan::Output& o : plan.outputs) {
    const Tensor& values = raw[plan.raw_single_pos[o.raw]];
    if (o.kind == FeatureKind::kSparse) {
      std::vector<std::span<const int64_t>> ids;
      for (size_t r : o.index_raw) ids.push_back(Ints(raw[plan.raw_single_pos[r]]));
      std::vector<int64_t> perm;
      std::vector<int64_t> indices;
      SLUICE_RETURN_IF_ERROR(SparseRow(o, ids, 0, values.num_elements(), -1, &perm, &indices));
      SLUICE_RETURN_IF_ERROR(AddSparse(o, values, perm, indices, o.size, &out));
    } else if (o.kind == FeatureKind::kRagged) {
      Scratch& scratch = ThreadScratch();
      std::vector<std::span<const int64_t>>& parts = scratch.parts;
      parts.clear();
      for (const CompositePlan::Part& p : o.parts) {
        parts.push_back(p.kind == PartKind::kUniformRowLength
                            ? std::span<const int64_t>()
                            : Ints(raw[plan.raw_single_pos[p.raw]]));
      }
      int64_t rows = 0;
      SLUICE_RETURN_IF_ERROR(
          RaggedRow(o, parts, values.num_elements(), -1, &scratch.splits, &rows));
      SLUICE_ASSIGN_OR_RETURN(Tensor flat, FlatValues(o, values));
      out.push_back(std::move(flat));
      for (size_t k = 0; k < o.dense_from; ++k) {
        SLUICE_ASSIGN_OR_RETURN(Tensor t, SplitsTensor(o, scratch.splits[k]));
        out.push_back(std::move(t));
      }
    } else {
      out.push_back(values);
    }
  }
  return Element(std::move(out), plan.single_names);
}

Result<Element> AssembleBatch(const CompositePlan& plan, const Element& raw, int64_t rows) {
  std::vector<Tensor> out;
  out.reserve(plan.batch_names->size());
  auto starts_of = [&](size_t r) { return RowStartsOf(raw[plan.raw_batch_pos[r] + 1]); };
  for (const CompositePlan::Output& o : plan.outputs) {
    const size_t pos = plan.raw_batch_pos[o.raw];
    const Tensor& values = raw[pos];
    if (o.kind != FeatureKind::kSparse && o.kind != FeatureKind::kRagged) {
      out.push_back(values);
      if (o.kind == FeatureKind::kVarLen) out.push_back(raw[pos + 1]);
      continue;
    }
    const std::vector<int64_t> vstart = starts_of(o.raw);
    // rows < 0: each feature's own rows (the steps of a feature list); its
    // partition lists must have as many.
    const int64_t own_rows = rows >= 0 ? rows : static_cast<int64_t>(vstart.size()) - 1;
    if (o.kind == FeatureKind::kRagged && rows < 0) {
      for (const CompositePlan::Part& p : o.parts) {
        if (p.kind == PartKind::kUniformRowLength) continue;
        const int64_t n = raw[plan.raw_batch_pos[p.raw] + 1].num_elements();
        if (n != own_rows) {
          return DataError(o, -1,
                           "partition feature list " + Quoted(p.key) + " has " + std::to_string(n) +
                               " steps but value feature list " + Quoted(o.value_key) + " has " +
                               std::to_string(own_rows));
        }
      }
    }
    if (o.kind == FeatureKind::kSparse) {
      std::vector<std::vector<int64_t>> istart;
      for (size_t r : o.index_raw) istart.push_back(starts_of(r));
      std::vector<int64_t> perm;
      std::vector<int64_t> indices;
      for (int64_t b = 0; b < rows; ++b) {
        const auto r = static_cast<size_t>(b);
        std::vector<std::span<const int64_t>> ids;
        for (size_t j = 0; j < o.index_raw.size(); ++j) {
          ids.push_back(Ints(raw[plan.raw_batch_pos[o.index_raw[j]]])
                            .subspan(static_cast<size_t>(istart[j][r]),
                                     static_cast<size_t>(istart[j][r + 1] - istart[j][r])));
        }
        SLUICE_RETURN_IF_ERROR(
            SparseRow(o, ids, vstart[r], vstart[r + 1] - vstart[r], b, &perm, &indices));
      }
      std::vector<int64_t> dense_shape = o.size;
      dense_shape.insert(dense_shape.begin(), rows);
      SLUICE_RETURN_IF_ERROR(AddSparse(o, values, perm, indices, std::move(dense_shape), &out));
      continue;
    }
    // Ragged: each example's splits, then concatenated level by level.
    std::vector<std::vector<int64_t>> pstart(o.parts.size());
    for (size_t i = 0; i < o.parts.size(); ++i) {
      if (o.parts[i].kind != PartKind::kUniformRowLength) pstart[i] = starts_of(o.parts[i].raw);
    }
    std::vector<std::vector<int64_t>> levels(o.dense_from + 1, std::vector<int64_t>{0});
    std::vector<std::vector<int64_t>> splits(o.dense_from);
    for (int64_t b = 0; b < own_rows; ++b) {
      const auto r = static_cast<size_t>(b);
      std::vector<std::span<const int64_t>> parts;
      for (size_t i = 0; i < o.parts.size(); ++i) {
        if (o.parts[i].kind == PartKind::kUniformRowLength) {
          parts.emplace_back();
          continue;
        }
        parts.push_back(Ints(raw[plan.raw_batch_pos[o.parts[i].raw]])
                            .subspan(static_cast<size_t>(pstart[i][r]),
                                     static_cast<size_t>(pstart[i][r + 1] - pstart[i][r])));
      }
      int64_t top = 0;
      SLUICE_RETURN_IF_ERROR(RaggedRow(o, parts, vstart[r + 1] - vstart[r], b, &splits, &top));
      levels[0].push_back(levels[0].back() + top);
      for (size_t k = 0; k < o.dense_from; ++k) {
        const int64_t offset = levels[k + 1].back();
        for (size_t i = 1; i < splits[k].size(); ++i) {
          levels[k + 1].push_back(offset + splits[k][i]);
        }
      }
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor flat, FlatValues(o, values));
    out.push_back(std::move(flat));
    for (const std::vector<int64_t>& s : levels) {
      SLUICE_ASSIGN_OR_RETURN(Tensor t, SplitsTensor(o, s));
      out.push_back(std::move(t));
    }
  }
  return Element(std::move(out), plan.batch_names);
}

}  // namespace sluice::records_internal
