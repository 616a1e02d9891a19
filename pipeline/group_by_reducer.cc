// group_by_reducer: one state per key, made by init(key) and folded with
// reduce(state, element) over the key's elements; at the end of the input,
// finalize(state) of each key in increasing key order
// (tf.data.experimental.group_by_reducer, whose states live in a std::map).
//
// The states are charged to the RAM budget and saved with the iterator; a
// state is dropped once finalized, so the saved state shrinks as the output
// is read.
#include <map>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

struct KeyState {
  Element state;
  std::vector<DType> dtypes;  // init's, which every later state keeps
  int64_t bytes = 0;          // charged
};

class GroupByReducerIterator : public IteratorNode {
 public:
  GroupByReducerIterator(IteratorContext& ctx, const DatasetNode& node,
                         std::unique_ptr<IteratorNode> input, const KeyFn& key_fn,
                         const Reducer& reducer)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        key_fn_(key_fn),
        reducer_(reducer) {}
  ~GroupByReducerIterator() override { Clear(); }

  Status Save(StateWriter& w) override {
    w.Tag("group_by_reducer");
    w.I64(taken_);
    w.Bool(input_ended_);
    SLUICE_RETURN_IF_ERROR(input_->Save(w));
    w.U64(states_.size());
    for (const auto& [key, s] : states_) {
      w.I64(key);
      SLUICE_RETURN_IF_ERROR(w.Elem(s.state));
    }
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("group_by_reducer"));
    Clear();
    SLUICE_ASSIGN_OR_RETURN(taken_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
    SLUICE_RETURN_IF_ERROR(input_->Restore(r));
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    for (uint64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(int64_t key, r.I64());
      SLUICE_ASSIGN_OR_RETURN(Element state, r.Elem());
      KeyState& s = states_[key];
      for (const Tensor& t : state.components()) s.dtypes.push_back(t.dtype());
      SLUICE_RETURN_IF_ERROR(Set(s, std::move(state)));
    }
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    while (!input_ended_) {
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) {
        input_ended_ = true;
        break;
      }
      const int64_t index = taken_++;
      auto fail = [&](const Status& s) {
        return StageError(s, node_.name(), index, e->origin_source(), e->origin_index());
      };
      Result<int64_t> key = key_fn_(*e);
      if (!key.ok()) return fail(key.status());
      auto it = states_.find(*key);
      if (it == states_.end()) {
        Result<Element> init = reducer_.init(*key);
        if (!init.ok()) return fail(init.status());
        it = states_.emplace(*key, KeyState{}).first;
        for (const Tensor& t : init->components()) it->second.dtypes.push_back(t.dtype());
        if (Status s = Set(it->second, std::move(init).value()); !s.ok()) return fail(s);
      }
      Result<Element> next = reducer_.reduce(it->second.state, std::move(*e));
      if (!next.ok()) return fail(next.status());
      if (Status s = CheckDTypes(*next, it->second.dtypes); !s.ok()) return fail(s);
      if (Status s = Set(it->second, std::move(next).value()); !s.ok()) return fail(s);
    }
    if (states_.empty()) return std::optional<Element>();
    auto it = states_.begin();
    Element state = std::move(it->second.state);
    Release(it->second.bytes);
    states_.erase(it);
    Result<Element> out = [&] {
      WorkTimer timer(this);
      return reducer_.finalize(std::move(state));
    }();
    if (!out.ok()) {
      return Status(out.status().code(), "stage '" + node_.name() + "': finalize failed: " +
                                             std::string(out.status().message()));
    }
    return std::optional<Element>(std::move(out).value());
  }

 private:
  static Status CheckDTypes(const Element& state, const std::vector<DType>& dtypes) {
    if (state.size() == dtypes.size()) {
      bool same = true;
      for (size_t i = 0; i < dtypes.size(); ++i) same = same && state[i].dtype() == dtypes[i];
      if (same) return Status::OK();
    }
    std::string want;
    for (DType d : dtypes) want += (want.empty() ? "" : ", ") + std::string(DTypeName(d));
    std::string got;
    for (const Tensor& t : state.components()) {
      got += (got.empty() ? "" : ", ") + std::string(DTypeName(t.dtype()));
    }
    return Status::InvalidArgument("the reduce function returned a state of another structure: (" +
                                   got + "), init's state is (" + want + ")");
  }

  // Replaces a key's state, charging its bytes.
  Status Set(KeyState& s, Element state) {
    const int64_t b = ElementBytes(state);
    Release(s.bytes);
    s.bytes = 0;
    s.state = std::move(state);
    if (bytes_ + b > ctx()->memory().limit()) {
      return TooBigForBudget(node_.name(), std::to_string(states_.size()) + " keys' states",
                             bytes_ + b, ctx()->memory().limit());
    }
    ctx()->memory().ChargeRequired(b);
    bytes_ += b;
    s.bytes = b;
    counters()->buffered_bytes.fetch_add(b, std::memory_order_relaxed);
    counters()->buffer_depth.store(static_cast<int64_t>(states_.size()), std::memory_order_relaxed);
    return ctx()->memory().CheckRequired(node_.name());
  }
  void Release(int64_t b) {
    bytes_ -= b;
    ctx()->memory().ReleaseRequired(b);
    counters()->buffered_bytes.fetch_sub(b, std::memory_order_relaxed);
  }
  void Clear() {
    Release(bytes_);
    states_.clear();
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const KeyFn& key_fn_;
  const Reducer& reducer_;
  std::map<int64_t, KeyState> states_;  // by key: the output order
  int64_t taken_ = 0;
  bool input_ended_ = false;
  int64_t bytes_ = 0;
};

class GroupByReducerNode : public DatasetNode {
 public:
  GroupByReducerNode(const Dataset& input, KeyFn key_fn, Reducer reducer, std::string name)
      : DatasetNode("group_by_reducer", std::move(name), {input.node()}, ElementSpec::Unknown(),
                    input.cardinality() == 0 ? 0 : kUnknownCardinality),
        key_fn_(std::move(key_fn)),
        reducer_(std::move(reducer)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<GroupByReducerIterator>(ctx, *this, std::move(input), key_fn_, reducer_));
  }

 private:
  KeyFn key_fn_;
  Reducer reducer_;
};

}  // namespace

Dataset MakeGroupByReducer(const Dataset& input, KeyFn key_fn, Reducer reducer,
                           GroupByReducerOptions options) {
  const char* empty = !key_fn             ? "key"
                      : !reducer.init     ? "init"
                      : !reducer.reduce   ? "reduce"
                      : !reducer.finalize ? "finalize"
                                          : nullptr;
  if (empty) {
    return Dataset::FromError(Status::InvalidArgument(std::string("group_by_reducer: the ") +
                                                      empty + " function is empty"));
  }
  if (input.cardinality() == kInfiniteCardinality) {
    return Dataset::FromError(Status::InvalidArgument(
        "group_by_reducer: " + input.DebugString() +
        " is infinite, and group_by_reducer outputs only at the end of its input"));
  }
  return Dataset(std::make_shared<GroupByReducerNode>(input, std::move(key_fn), std::move(reducer),
                                                      std::move(options.name)));
}

}  // namespace sluice::pipeline_internal

namespace sluice {

std::function<Dataset(const Dataset&)> group_by_reducer(KeyFn key_fn, Reducer reducer,
                                                        GroupByReducerOptions options) {
  return [key_fn = std::move(key_fn), reducer = std::move(reducer),
          options = std::move(options)](const Dataset& ds) {
    if (!ds.status().ok()) return ds;
    return pipeline_internal::MakeGroupByReducer(ds, key_fn, reducer, options);
  };
}

}  // namespace sluice
