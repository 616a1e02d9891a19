// pack_sequences: sequences packed into fixed-length rows, first-fit or
// best-fit over num_packing_bins open rows (Grain's packing; see
// pack_sequences.h for the semantics and the output layout).
#include "sluice/pipeline/pack_sequences.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <set>

#include "sluice/core/rng.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

// Longest row accepted: keeps every size computation far from overflow.
constexpr int64_t kMaxLength = int64_t{1} << 40;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// How each component is packed, fixed by the input's names and dtypes.
struct Layout {
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  std::vector<int64_t> lengths;  // row length per component
  std::vector<int64_t> pads;     // padding value per component
  std::shared_ptr<const std::vector<std::string>> out_names;
  int64_t row_tokens = 0;  // sum of lengths
  int64_t row_bytes = 0;   // one row's tensors
  size_t size() const { return names.size(); }
};

Result<Layout> MakeLayout(int64_t length, const PackOptions& o, std::vector<std::string> names,
                          std::vector<DType> dtypes) {
  Layout l;
  if (names.empty()) return Status::InvalidArgument("elements have no components to pack");
  std::set<std::string> seen;
  for (size_t c = 0; c < names.size(); ++c) {
    if (names[c].empty()) {
      return Status::InvalidArgument(
          "component " + std::to_string(c) +
          " has no name: pack_sequences packs dicts of named 1-D tensors ({\"inputs\": ...})");
    }
    if (!seen.insert(names[c]).second) {
      return Status::InvalidArgument("two components are named " + Quote(names[c]));
    }
    if (dtypes[c] == DType::kString) {
      return Status::InvalidArgument(
          "component " + Quote(names[c]) +
          " is a string tensor; pack_sequences packs numbers (token ids)");
    }
  }
  for (const std::string& n : names) {
    for (const char* suffix : {"_segment_ids", "_positions"}) {
      if (seen.count(n + suffix)) {
        return Status::InvalidArgument("component " + Quote(n + suffix) + " would clash with the " +
                                       suffix + " of " + Quote(n));
      }
    }
  }
  for (const auto& [name, len] : o.feature_lengths) {
    if (!seen.count(name)) {
      return Status::InvalidArgument("feature_lengths names " + Quote(name) +
                                     ", which is not a component");
    }
    if (len < 1 || len > kMaxLength) {
      return Status::InvalidArgument("feature_lengths[" + Quote(name) +
                                     "] must be in [1, 2^40], got " + std::to_string(len));
    }
  }
  for (const auto& entry : o.padding_values) {
    if (!seen.count(entry.first)) {
      return Status::InvalidArgument("padding_values names " + Quote(entry.first) +
                                     ", which is not a component");
    }
  }
  auto out = std::make_shared<std::vector<std::string>>(names);
  for (size_t c = 0; c < names.size(); ++c) {
    auto fl = o.feature_lengths.find(names[c]);
    auto pv = o.padding_values.find(names[c]);
    l.lengths.push_back(fl == o.feature_lengths.end() ? length : fl->second);
    l.pads.push_back(pv == o.padding_values.end() ? o.padding_value : pv->second);
    l.row_tokens += l.lengths.back();
    l.row_bytes += l.lengths.back() * static_cast<int64_t>(DTypeSize(dtypes[c]) + 8);
    out->push_back(names[c] + "_segment_ids");
    out->push_back(names[c] + "_positions");
  }
  l.names = std::move(names);
  l.dtypes = std::move(dtypes);
  l.out_names = std::move(out);
  return l;
}

// Writes `v` as dtype `d` into n consecutive elements at dst.
void Fill(DType d, int64_t v, void* dst, int64_t n) {
  auto fill = [&](auto x) { std::fill_n(static_cast<decltype(x)*>(dst), n, x); };
  switch (d) {
    case DType::kBool: fill(static_cast<bool>(v)); break;
    case DType::kUInt8: fill(static_cast<uint8_t>(v)); break;
    case DType::kInt32: fill(static_cast<int32_t>(v)); break;
    case DType::kInt64: fill(v); break;
    case DType::kFloat16: fill(float16(static_cast<float>(v))); break;
    case DType::kBFloat16: fill(bfloat16(static_cast<float>(v))); break;
    case DType::kFloat32: fill(static_cast<float>(v)); break;
    case DType::kFloat64: fill(static_cast<double>(v)); break;
    case DType::kString: break;  // rejected by MakeLayout
  }
}

// One open row: per component its values, segment ids and positions (in
// the output's order: values of every component, then ids and positions).
struct Bin {
  int64_t count = 0;          // sequences in it; 0: closed, no tensors
  std::vector<int64_t> used;  // tokens per component
  std::vector<Tensor> tensors;
};

class PackIterator : public IteratorNode {
 public:
  PackIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> input,
               int64_t length, const PackOptions& o)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        length_(length),
        o_(o),
        bins_(static_cast<size_t>(o.num_packing_bins)) {
    counters()->buffer_capacity.store(o.num_packing_bins, std::memory_order_relaxed);
  }
  ~PackIterator() override { Clear(); }

  Status Save(StateWriter& w) override {
    w.Tag("pack_sequences");
    w.Bool(input_ended_);
    w.I64(read_);
    w.I64(finalized_rows_);
    w.Bool(layout_.has_value());
    if (layout_) {
      w.U64(layout_->size());
      for (size_t c = 0; c < layout_->size(); ++c) {
        w.String(layout_->names[c]);
        w.U64(static_cast<uint64_t>(layout_->dtypes[c]));
      }
    }
    w.U64(ready_.size());
    for (const Element& row : ready_) SLUICE_RETURN_IF_ERROR(w.Elem(row));
    w.U64(static_cast<uint64_t>(
        std::count_if(bins_.begin(), bins_.end(), [](const Bin& b) { return b.count > 0; })));
    for (size_t i = 0; i < bins_.size(); ++i) {
      const Bin& b = bins_[i];
      if (b.count == 0) continue;
      w.U64(i);
      w.I64(b.count);
      for (int64_t u : b.used) w.I64(u);
      SLUICE_RETURN_IF_ERROR(w.Elem(Element(b.tensors)));
    }
    return input_->Save(w);
  }

  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("pack_sequences"));
    Clear();
    SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
    SLUICE_ASSIGN_OR_RETURN(read_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(finalized_rows_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(bool has_layout, r.Bool());
    layout_.reset();
    if (has_layout) SLUICE_RETURN_IF_ERROR(RestoreLayout(r));
    const uint64_t nbins = bins_.size();
    SLUICE_ASSIGN_OR_RETURN(uint64_t nready, r.U64());
    if (nready > nbins || (nready > 0 && !layout_)) return Corrupt("rows ready");
    for (uint64_t i = 0; i < nready; ++i) {
      SLUICE_ASSIGN_OR_RETURN(Element row, r.Elem());
      if (!RowMatches(row.components())) return Corrupt("a ready row");
      SLUICE_RETURN_IF_ERROR(Charge(1));
      ready_.push_back(Element(std::move(row.components()), layout_->out_names));
    }
    SLUICE_ASSIGN_OR_RETURN(uint64_t nopen, r.U64());
    if (nopen > nbins || (nopen > 0 && !layout_)) return Corrupt("open rows");
    for (uint64_t k = 0; k < nopen; ++k) {
      SLUICE_ASSIGN_OR_RETURN(uint64_t i, r.U64());
      if (i >= nbins || bins_[i].count > 0) return Corrupt("an open row's index");
      Bin& b = bins_[i];
      SLUICE_ASSIGN_OR_RETURN(b.count, r.I64());
      b.used.assign(layout_->size(), 0);
      for (size_t c = 0; c < layout_->size(); ++c) {
        SLUICE_ASSIGN_OR_RETURN(b.used[c], r.I64());
        if (b.used[c] < 0 || b.used[c] > layout_->lengths[c]) return Corrupt("an open row");
      }
      SLUICE_ASSIGN_OR_RETURN(Element t, r.Elem());
      if (b.count < 1 || !RowMatches(t.components())) return Corrupt("an open row");
      SLUICE_RETURN_IF_ERROR(Charge(1));
      b.tensors = std::move(t.components());
    }
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    while (ready_.empty()) {
      if (input_ended_) return std::optional<Element>();
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      WorkTimer timer(this);
      if (!e) {
        input_ended_ = true;
        Finalize();
        continue;
      }
      const int64_t index = read_++;
      Status s = Add(*e);
      if (!s.ok()) {
        return StageError(s, node_.name(), index, e->origin_source(), e->origin_index());
      }
    }
    Element row = std::move(ready_.front());
    ready_.pop_front();
    Release(1);
    // Padding: the cells whose segment id is 0.
    int64_t pad = 0;
    const size_t n = layout_->size();
    for (size_t c = 0; c < n; ++c) {
      for (int32_t id : row[n + 2 * c].flat<int32_t>()) pad += id == 0;
    }
    counters()->tokens.fetch_add(layout_->row_tokens, std::memory_order_relaxed);
    counters()->padding_tokens.fetch_add(pad, std::memory_order_relaxed);
    return std::optional<Element>(std::move(row));
  }

 private:
  Status Corrupt(const std::string& what) const {
    return Status::DataLoss("iterator state: stage '" + node_.name() + "' has a corrupt " + what +
                            " (a checkpoint of another pipeline?)");
  }

  Status RestoreLayout(StateReader& r) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    if (n == 0 || n > 4096) return Corrupt("component count");
    std::vector<std::string> names;
    std::vector<DType> dtypes;
    for (uint64_t c = 0; c < n; ++c) {
      SLUICE_ASSIGN_OR_RETURN(std::string name, r.String());
      SLUICE_ASSIGN_OR_RETURN(uint64_t d, r.U64());
      if (d >= static_cast<uint64_t>(kNumDTypes)) return Corrupt("dtype");
      names.push_back(std::move(name));
      dtypes.push_back(static_cast<DType>(d));
    }
    Result<Layout> l = MakeLayout(length_, o_, std::move(names), std::move(dtypes));
    if (!l.ok()) return Corrupt("layout: " + std::string(l.status().message()));
    layout_ = std::move(l).value();
    return Status::OK();
  }

  // True if `t` has a row's tensors for the layout.
  bool RowMatches(const std::vector<Tensor>& t) const {
    const size_t n = layout_->size();
    if (t.size() != 3 * n) return false;
    for (size_t c = 0; c < n; ++c) {
      const Shape want{layout_->lengths[c]};
      if (t[c].dtype() != layout_->dtypes[c] || t[c].shape() != want) return false;
      for (size_t k : {n + 2 * c, n + 2 * c + 1}) {
        if (t[k].dtype() != DType::kInt32 || t[k].shape() != want) return false;
      }
    }
    return true;
  }

  // Checks `e` against the layout (made from the first element).
  Status Check(const Element& e) {
    if (!layout_) {
      std::vector<DType> dtypes;
      for (const Tensor& t : e.components()) dtypes.push_back(t.dtype());
      SLUICE_ASSIGN_OR_RETURN(layout_, MakeLayout(length_, o_, e.names(), std::move(dtypes)));
    }
    if (e.size() != layout_->size() || e.names() != layout_->names) {
      return Status::InvalidArgument("element " + ElementSpec::Of(e).DebugString() +
                                     " has other components than the first one had");
    }
    for (size_t c = 0; c < e.size(); ++c) {
      const Tensor& t = e[c];
      if (t.dtype() != layout_->dtypes[c] || t.shape().rank() != 1) {
        return Status::InvalidArgument("component " + Quote(layout_->names[c]) + " is " +
                                       ShapeSpecString(t.dtype(), t.shape()) + "; expected a 1-D " +
                                       std::string(DTypeName(layout_->dtypes[c])) + " tensor");
      }
      if (t.shape().dim(0) > layout_->lengths[c] && !o_.truncate) {
        return Status::InvalidArgument(
            "component " + Quote(layout_->names[c]) + " has " + std::to_string(t.shape().dim(0)) +
            " tokens, more than its row length " + std::to_string(layout_->lengths[c]) +
            " (truncate it before packing, or set truncate)");
      }
    }
    return Status::OK();
  }

  bool Fits(const Bin& b, const std::vector<int64_t>& lens) const {
    if (b.count == 0) return true;
    for (size_t c = 0; c < lens.size(); ++c) {
      if (b.used[c] + lens[c] > layout_->lengths[c]) return false;
    }
    return true;
  }

  // The row for a sequence of `lens` tokens, or -1 when none has room.
  int64_t Choose(const std::vector<int64_t>& lens) const {
    int64_t best = -1;
    int64_t best_used = -1;
    for (size_t i = 0; i < bins_.size(); ++i) {
      const Bin& b = bins_[i];
      if (!Fits(b, lens)) continue;
      if (o_.algorithm == PackAlgorithm::kFirstFit) return static_cast<int64_t>(i);
      int64_t used = 0;
      for (int64_t u : b.used) used += u;
      if (used > best_used) best = static_cast<int64_t>(i), best_used = used;
    }
    return best;
  }

  Status Add(const Element& e) {
    SLUICE_RETURN_IF_ERROR(Check(e));
    const size_t n = layout_->size();
    std::vector<int64_t> lens(n);
    for (size_t c = 0; c < n; ++c) lens[c] = std::min(e[c].shape().dim(0), layout_->lengths[c]);
    int64_t i = Choose(lens);
    if (i < 0) {
      Finalize();
      i = 0;
    }
    Bin& b = bins_[static_cast<size_t>(i)];
    if (b.count == 0) SLUICE_RETURN_IF_ERROR(Open(b));
    const int32_t id = static_cast<int32_t>(++b.count);
    for (size_t c = 0; c < n; ++c) {
      const int64_t at = b.used[c];
      const size_t es = DTypeSize(layout_->dtypes[c]);
      if (lens[c] > 0) {
        std::memcpy(static_cast<char*>(b.tensors[c].raw_data()) + at * static_cast<int64_t>(es),
                    e[c].raw_data(), static_cast<size_t>(lens[c]) * es);
      }
      int32_t* seg = b.tensors[n + 2 * c].flat<int32_t>().data() + at;
      int32_t* pos = b.tensors[n + 2 * c + 1].flat<int32_t>().data() + at;
      for (int64_t k = 0; k < lens[c]; ++k) {
        seg[k] = id;
        pos[k] = static_cast<int32_t>(k);
      }
      b.used[c] += lens[c];
    }
    return Status::OK();
  }

  // Allocates an empty row's tensors (charged to the RAM budget first).
  Status Open(Bin& b) {
    SLUICE_RETURN_IF_ERROR(Charge(1));
    Status s = Allocate(b);
    if (!s.ok()) {
      Release(1);
      b = Bin();
    }
    return s;
  }
  Status Allocate(Bin& b) const {
    const size_t n = layout_->size();
    b.used.assign(n, 0);
    b.tensors.assign(3 * n, Tensor());
    for (size_t c = 0; c < n; ++c) {
      const Shape shape{layout_->lengths[c]};
      SLUICE_ASSIGN_OR_RETURN(b.tensors[c], Tensor::Allocate(layout_->dtypes[c], shape));
      Fill(layout_->dtypes[c], layout_->pads[c], b.tensors[c].raw_data(), layout_->lengths[c]);
      SLUICE_ASSIGN_OR_RETURN(b.tensors[n + 2 * c], Tensor::Zeros(DType::kInt32, shape));
      SLUICE_ASSIGN_OR_RETURN(b.tensors[n + 2 * c + 1], Tensor::Zeros(DType::kInt32, shape));
    }
    return Status::OK();
  }

  // Moves every non-empty open row to ready_ (in row order, or shuffled).
  void Finalize() {
    std::vector<Element> rows;
    for (Bin& b : bins_) {
      if (b.count == 0) continue;
      rows.emplace_back(std::move(b.tensors), layout_->out_names);
      b = Bin();
    }
    if (o_.shuffle_bins && rows.size() > 1) {
      Rng rng(o_.seed, static_cast<uint64_t>(finalized_rows_));
      for (size_t k = rows.size() - 1; k > 0; --k) {
        std::swap(rows[k], rows[static_cast<size_t>(rng.UniformInt(k + 1))]);
      }
    }
    finalized_rows_ += static_cast<int64_t>(rows.size());
    for (Element& row : rows) ready_.push_back(std::move(row));
  }

  // Rows held (open or ready) are charged to the RAM budget as required:
  // the stage cannot go on without them.
  Status Charge(int64_t rows) {
    const int64_t b = rows * layout_->row_bytes;
    if (charged_ + b > ctx()->memory().limit()) {
      return Status::ResourceExhausted(
          "stage '" + node_.name() + "': " + std::to_string(held_ + rows) + " rows of " +
          ByteSize(layout_->row_bytes) + " would exceed the ram_budget of " +
          ByteSize(ctx()->memory().limit()) + "; use fewer num_packing_bins or a shorter length");
    }
    ctx()->memory().ChargeRequired(b);
    charged_ += b;
    held_ += rows;
    Count();
    return Status::OK();
  }
  void Release(int64_t rows) {
    const int64_t b = rows * layout_->row_bytes;
    ctx()->memory().ReleaseRequired(b);
    charged_ -= b;
    held_ -= rows;
    Count();
  }
  void Count() {
    counters()->buffer_depth.store(held_, std::memory_order_relaxed);
    counters()->buffered_bytes.store(charged_, std::memory_order_relaxed);
  }
  void Clear() {
    ctx()->memory().ReleaseRequired(charged_);
    charged_ = 0;
    held_ = 0;
    Count();
    ready_.clear();
    for (Bin& b : bins_) b = Bin();
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const int64_t length_;
  const PackOptions& o_;
  std::optional<Layout> layout_;  // from the first element
  std::vector<Bin> bins_;         // num_packing_bins, open when count > 0
  std::deque<Element> ready_;     // finalized rows, in emission order
  bool input_ended_ = false;
  int64_t read_ = 0;            // input elements read (for messages)
  int64_t finalized_rows_ = 0;  // rows moved to ready_ so far (shuffle stream)
  int64_t charged_ = 0;         // bytes charged to the RAM budget
  int64_t held_ = 0;            // rows charged
};

// Output spec and argument checks against a known input spec.
Result<ElementSpec> PackSpec(const ElementSpec& in, int64_t length, const PackOptions& o) {
  if (!in.known()) return ElementSpec::Unknown();
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  for (const ComponentSpec& c : in.components()) {
    names.push_back(c.name);
    dtypes.push_back(c.dtype);
  }
  SLUICE_ASSIGN_OR_RETURN(Layout l, MakeLayout(length, o, names, dtypes));
  std::vector<ComponentSpec> out;
  for (size_t c = 0; c < l.size(); ++c) {
    const ComponentSpec& cs = in.components()[c];
    if (!cs.shape.unknown_rank() && cs.shape.rank() != 1) {
      return Status::InvalidArgument("component " + Quote(cs.name) + " is " +
                                     ShapeSpecString(cs.dtype, cs.shape) +
                                     "; pack_sequences packs 1-D tensors");
    }
    if (!cs.shape.unknown_rank() && cs.shape.dim(0) != Shape::kUnknownDim &&
        cs.shape.dim(0) > l.lengths[c] && !o.truncate) {
      return Status::InvalidArgument(
          "component " + Quote(cs.name) + " is " + ShapeSpecString(cs.dtype, cs.shape) +
          ", longer than its row length " + std::to_string(l.lengths[c]) + " (or set truncate)");
    }
    out.push_back({cs.name, cs.dtype, Shape{l.lengths[c]}});
  }
  for (size_t c = 0; c < l.size(); ++c) {
    out.push_back({l.names[c] + "_segment_ids", DType::kInt32, Shape{l.lengths[c]}});
    out.push_back({l.names[c] + "_positions", DType::kInt32, Shape{l.lengths[c]}});
  }
  return ElementSpec(std::move(out));
}

int64_t PackCardinality(int64_t in) {
  return in == 0 || in == kInfiniteCardinality ? in : kUnknownCardinality;
}

class PackNode : public DatasetNode {
 public:
  PackNode(const Dataset& input, int64_t length, PackOptions o, ElementSpec spec)
      : DatasetNode("pack_sequences", o.name, {input.node()}, std::move(spec),
                    PackCardinality(input.cardinality())),
        length_(length),
        o_(std::move(o)) {}
  std::string Describe() const override {
    return name() + "(" + std::to_string(length_) +
           (o_.algorithm == PackAlgorithm::kFirstFit ? ", first_fit)" : ", best_fit)");
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<PackIterator>(ctx, *this, std::move(input), length_, o_));
  }

 private:
  int64_t length_;
  PackOptions o_;
};

}  // namespace

Dataset MakePackSequences(const Dataset& input, int64_t length, PackOptions options) {
  auto bad = [](const std::string& what) {
    return Dataset::FromError(Status::InvalidArgument("pack_sequences: " + what));
  };
  if (!input.status().ok()) return input;
  if (length < 1 || length > kMaxLength) {
    return bad("length must be in [1, 2^40], got " + std::to_string(length));
  }
  if (options.num_packing_bins < 1 || options.num_packing_bins > (int64_t{1} << 20)) {
    return bad("num_packing_bins must be in [1, 2^20], got " +
               std::to_string(options.num_packing_bins));
  }
  if (options.algorithm != PackAlgorithm::kFirstFit &&
      options.algorithm != PackAlgorithm::kBestFit) {
    return bad("unknown algorithm");
  }
  for (const auto& [name, len] : options.feature_lengths) {
    if (len < 1 || len > kMaxLength) {
      return bad("feature_lengths[" + Quote(name) + "] must be in [1, 2^40], got " +
                 std::to_string(len));
    }
  }
  Result<ElementSpec> spec = PackSpec(input.element_spec(), length, options);
  if (!spec.ok()) return bad(std::string(spec.status().message()));
  return Dataset(
      std::make_shared<PackNode>(input, length, std::move(options), std::move(spec).value()));
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Dataset pack_sequences(const Dataset& input, int64_t length, PackOptions options) {
  return pipeline_internal::MakePackSequences(input, length, std::move(options));
}

std::function<Dataset(const Dataset&)> pack_sequences(int64_t length, PackOptions options) {
  return [length, options = std::move(options)](const Dataset& input) {
    return pipeline_internal::MakePackSequences(input, length, options);
  };
}

}  // namespace sluice
