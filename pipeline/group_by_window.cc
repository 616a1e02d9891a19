// group_by_window: elements grouped by key into windows; a full window (and
// at the end of the input each partial one, in increasing key order, as
// tf.data's std::map gives) becomes the elements of reduce_fn(key, window),
// which are all produced before more input is read (tf.data's
// group_by_window).
//
// The open windows' elements are charged to the RAM budget (as shuffle's
// buffer) and saved with the iterator; so is the window being reduced
// (reduce_fn is called again on restore, then its iterator restored). A
// key's window size is asked of window_size_fn when its window opens.
#include <algorithm>
#include <limits>
#include <map>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/indexed_iterator.h"
#include "sluice/pipeline/internal/stack.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/pipeline/internal/sub_dataset.h"

namespace sluice::pipeline_internal {
namespace {

// Stacked reads of a group's elements (batch asks for them first): one
// copy into the batch, without a Next() per row. Rows of different shapes
// or dtypes: nullopt, so batch reads them one by one and reports them.
class ElementsIterator : public IndexedIterator {
 public:
  ElementsIterator(IteratorContext& ctx, const DatasetNode& node,
                   const std::vector<Element>& elements)
      : IndexedIterator(ctx, node), elements_(elements) {}

 protected:
  std::optional<Result<Element>> FetchStacked(int64_t i, int64_t n) override {
    const Element& first = elements_[static_cast<size_t>(i)];
    std::vector<Element> rows(elements_.begin() + i, elements_.begin() + i + n);
    for (const Element& e : rows) {
      if (e.size() != first.size()) return std::nullopt;
      for (size_t c = 0; c < e.size(); ++c) {
        if (e[c].dtype() != first[c].dtype() || e[c].shape() != first[c].shape()) {
          return std::nullopt;
        }
      }
    }
    return StackElements(rows, "group_window", /*parallel=*/false);
  }

 private:
  const std::vector<Element>& elements_;
};

// The dataset of a group's elements, handed to reduce_fn.
class ElementsNode : public DatasetNode {
 public:
  ElementsNode(std::vector<Element> elements, ElementSpec spec)
      : DatasetNode("group_window", "", {}, std::move(spec), static_cast<int64_t>(elements.size())),
        elements_(std::move(elements)) {}
  std::string Describe() const override {
    return name() + "(" + std::to_string(elements_.size()) + ")";
  }
  bool random_access() const override { return true; }
  Result<Element> Get(IteratorContext&, int64_t i) const override {
    return elements_[static_cast<size_t>(i)];
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override {
    return std::unique_ptr<IteratorNode>(std::make_unique<ElementsIterator>(ctx, *this, elements_));
  }
  const std::vector<Element>& elements() const { return elements_; }

 private:
  std::vector<Element> elements_;
};

struct Group {
  int64_t size = 0;  // the window size of its key
  std::vector<Element> elements;
};

class GroupByWindowIterator : public IteratorNode {
 public:
  GroupByWindowIterator(IteratorContext& ctx, const DatasetNode& node, const IteratorParams& params,
                        std::unique_ptr<IteratorNode> input, const KeyFn& key_fn,
                        const WindowReduceFn& reduce_fn, const WindowSizeFn& size_fn)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        params_(params),
        input_(std::move(input)),
        key_fn_(key_fn),
        reduce_fn_(reduce_fn),
        size_fn_(size_fn) {}
  ~GroupByWindowIterator() override {
    Close();
    ctx()->memory().ReleaseRequired(bytes_);
  }

  Status Save(StateWriter& w) override {
    w.Tag("group_by_window");
    w.U64(params_.iteration);
    w.I64(taken_);
    w.I64(flushes_);
    w.Bool(input_ended_);
    SLUICE_RETURN_IF_ERROR(input_->Save(w));
    w.U64(groups_.size());
    for (const auto& [key, g] : groups_) {
      w.I64(key);
      w.I64(g.size);
      SLUICE_RETURN_IF_ERROR(SaveElements(w, g.elements));
    }
    w.Bool(current_ != nullptr);
    if (current_) {
      w.I64(current_key_);
      SLUICE_RETURN_IF_ERROR(SaveElements(w, window_->elements()));
      SLUICE_RETURN_IF_ERROR(current_->Save(w));
    }
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("group_by_window"));
    Close();
    groups_.clear();
    ctx()->memory().ReleaseRequired(bytes_);
    bytes_ = 0;
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    SLUICE_ASSIGN_OR_RETURN(taken_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(flushes_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
    SLUICE_RETURN_IF_ERROR(input_->Restore(r));
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    for (uint64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(int64_t key, r.I64());
      Group& g = groups_[key];
      SLUICE_ASSIGN_OR_RETURN(g.size, r.I64());
      SLUICE_RETURN_IF_ERROR(RestoreElements(r, g.size, &g.elements));
    }
    SLUICE_ASSIGN_OR_RETURN(bool has, r.Bool());
    if (has) {
      SLUICE_ASSIGN_OR_RETURN(int64_t key, r.I64());
      std::vector<Element> elements;
      SLUICE_RETURN_IF_ERROR(RestoreElements(r, std::numeric_limits<int64_t>::max(), &elements));
      --flushes_;  // Open counts it again
      SLUICE_RETURN_IF_ERROR(Open(key, std::move(elements)));
      SLUICE_RETURN_IF_ERROR(current_->Restore(r));
    }
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    for (;;) {
      if (current_) {
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, current_->Next());
        if (e) return e;
        Close();
      }
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      if (input_ended_) {
        if (groups_.empty()) return std::optional<Element>();
        SLUICE_RETURN_IF_ERROR(Flush(groups_.begin()));
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) {
        input_ended_ = true;
        continue;
      }
      const int64_t index = taken_++;
      auto fail = [&](const Status& s) {
        return StageError(s, node_.name(), index, e->origin_source(), e->origin_index());
      };
      // Not timed per element (a WorkTimer here would read the clock twice
      // per input element whenever this call is sampled).
      Result<int64_t> key = key_fn_(*e);
      if (!key.ok()) return fail(key.status());
      auto it = groups_.find(*key);
      if (it == groups_.end()) {
        Result<int64_t> size = size_fn_(*key);
        if (!size.ok()) return fail(size.status());
        if (*size < 1) {
          return fail(Status::InvalidArgument("the window size of key " + std::to_string(*key) +
                                              " is " + std::to_string(*size) +
                                              "; it must be >= 1"));
        }
        it = groups_.emplace(*key, Group{*size, {}}).first;
        it->second.elements.reserve(static_cast<size_t>(std::min<int64_t>(*size, 1024)));
      }
      SLUICE_RETURN_IF_ERROR(Charge(ElementBytes(*e)));
      it->second.elements.push_back(std::move(*e));
      if (static_cast<int64_t>(it->second.elements.size()) >= it->second.size) {
        SLUICE_RETURN_IF_ERROR(Flush(it));
      }
    }
  }

 private:
  Status Charge(int64_t b) {
    if (bytes_ + b > ctx()->memory().limit()) {
      return TooBigForBudget(node_.name(), "the open windows", bytes_ + b, ctx()->memory().limit());
    }
    ctx()->memory().ChargeRequired(b);
    bytes_ += b;
    counters()->buffered_bytes.fetch_add(b, std::memory_order_relaxed);
    return ctx()->memory().CheckRequired(node_.name());
  }
  void Uncharge(const std::vector<Element>& elements) {
    int64_t b = 0;
    for (const Element& e : elements) b += ElementBytes(e);
    bytes_ -= b;
    ctx()->memory().ReleaseRequired(b);
    counters()->buffered_bytes.fetch_sub(b, std::memory_order_relaxed);
  }

  Status Flush(std::map<int64_t, Group>::iterator it) {
    const int64_t key = it->first;
    std::vector<Element> elements = std::move(it->second.elements);
    groups_.erase(it);
    return Open(key, std::move(elements));
  }

  // Calls reduce_fn on the window and opens its dataset (still charged
  // until it is read out).
  Status Open(int64_t key, std::vector<Element> elements) {
    const Element first = elements.front();
    current_key_ = key;
    window_ = std::make_shared<ElementsNode>(std::move(elements), node_.inputs()[0]->spec());
    Dataset window(window_);
    DatasetFn fn = [&](const Element&) -> Result<Dataset> { return reduce_fn_(key, window); };
    const int64_t t0 = NowNs();
    Result<SubIterator> sub = OpenSubDataset(fn, first, flushes_++, *ctx(), params_, node_);
    counters()->busy_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed);
    counters()->total_ns.fetch_sub(NowNs() - t0, std::memory_order_relaxed);
    if (!sub.ok()) {
      Uncharge(window_->elements());
      window_.reset();
      return sub.status();
    }
    dataset_ = std::move(sub->dataset);
    current_ = std::move(sub->it);
    return Status::OK();
  }
  void Close() {
    current_.reset();
    dataset_.reset();
    if (window_) Uncharge(window_->elements());
    window_.reset();
  }

  static Status SaveElements(StateWriter& w, const std::vector<Element>& elements) {
    w.U64(elements.size());
    for (const Element& e : elements) SLUICE_RETURN_IF_ERROR(w.Elem(e));
    return Status::OK();
  }
  Status RestoreElements(StateReader& r, int64_t max, std::vector<Element>* out) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    if (n == 0 || n > static_cast<uint64_t>(max)) {
      return Status::DataLoss("iterator state: stage '" + node_.name() + "' has a window of " +
                              std::to_string(n) + " elements");
    }
    for (uint64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
      SLUICE_RETURN_IF_ERROR(Charge(ElementBytes(e)));
      out->push_back(std::move(e));
    }
    return Status::OK();
  }

  const DatasetNode& node_;
  IteratorParams params_;
  std::unique_ptr<IteratorNode> input_;
  const KeyFn& key_fn_;
  const WindowReduceFn& reduce_fn_;
  const WindowSizeFn& size_fn_;
  std::map<int64_t, Group> groups_;  // the open windows, by key
  int64_t taken_ = 0;                // input elements taken
  int64_t flushes_ = 0;              // windows reduced
  bool input_ended_ = false;
  int64_t bytes_ = 0;  // charged: open windows and the current one
  // The window being read out: its elements (for save), dataset, iterator.
  int64_t current_key_ = 0;
  std::shared_ptr<const ElementsNode> window_;
  std::optional<SubDataset> dataset_;
  std::unique_ptr<IteratorNode> current_;
};

class GroupByWindowNode : public DatasetNode {
 public:
  GroupByWindowNode(const Dataset& input, KeyFn key_fn, WindowReduceFn reduce_fn,
                    WindowSizeFn size_fn, std::string name, ElementSpec spec)
      : DatasetNode("group_by_window", std::move(name), {input.node()}, std::move(spec),
                    input.cardinality() == 0 ? 0 : kUnknownCardinality),
        key_fn_(std::move(key_fn)),
        reduce_fn_(std::move(reduce_fn)),
        size_fn_(std::move(size_fn)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(std::make_unique<GroupByWindowIterator>(
        ctx, *this, params, std::move(input), key_fn_, reduce_fn_, size_fn_));
  }

 private:
  KeyFn key_fn_;
  WindowReduceFn reduce_fn_;
  WindowSizeFn size_fn_;
};

}  // namespace

Dataset MakeFromElements(std::vector<Element> elements, ElementSpec spec) {
  return Dataset(std::make_shared<ElementsNode>(std::move(elements), std::move(spec)));
}

Dataset MakeGroupByWindow(const Dataset& input, KeyFn key_fn, WindowReduceFn reduce_fn,
                          WindowSizeFn size_fn, GroupByWindowOptions options, ElementSpec spec) {
  if (!key_fn || !reduce_fn || !size_fn) {
    return Dataset::FromError(Status::InvalidArgument(std::string("group_by_window: the ") +
                                                      (!key_fn      ? "key"
                                                       : !reduce_fn ? "reduce"
                                                                    : "window size") +
                                                      " function is empty"));
  }
  return Dataset(std::make_shared<GroupByWindowNode>(input, std::move(key_fn), std::move(reduce_fn),
                                                     std::move(size_fn), std::move(options.name),
                                                     std::move(spec)));
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Dataset Dataset::group_by_window(KeyFn key_fn, WindowReduceFn reduce_fn, int64_t window_size,
                                 GroupByWindowOptions options) const {
  if (!status().ok()) return *this;
  if (window_size < 1) {
    return FromError(Status::InvalidArgument("group_by_window: window_size must be >= 1, got " +
                                             std::to_string(window_size)));
  }
  return pipeline_internal::MakeGroupByWindow(
      *this, std::move(key_fn), std::move(reduce_fn),
      [window_size](int64_t) -> Result<int64_t> { return window_size; }, std::move(options),
      ElementSpec::Unknown());
}

Dataset Dataset::group_by_window(KeyFn key_fn, WindowReduceFn reduce_fn,
                                 WindowSizeFn window_size_fn, GroupByWindowOptions options) const {
  if (!status().ok()) return *this;
  return pipeline_internal::MakeGroupByWindow(*this, std::move(key_fn), std::move(reduce_fn),
                                              std::move(window_size_fn), std::move(options),
                                              ElementSpec::Unknown());
}

}  // namespace sluice
