// window: windows of `size` rows, each one element whose components are the
// rows stacked (tf.data's window, which yields a dataset per window; see
// grouping.h). Window k holds input elements k*shift + i*stride, i < size.
//
// The stage buffers (size - 1) * stride + 1 input elements (the span of a
// window), charged to the RAM budget as shuffle's buffer is. Saved state:
// the buffered elements, i.e. the rows the next windows share with the
// last one when shift < span (they are saved, not re-read), and how many
// input elements to skip when shift > span.
//
// Non-overlapping consecutive windows (shift == size, stride 1) over an
// input that makes stacked reads (IteratorNode::NextStacked: file sources,
// from_window) take the rows stacked, as batch does, holding nothing.
//
// from_window: the rows of a window as a random-access source whose stacked
// reads (what batch asks for first) are views of the window's tensors, so
// from_window(w).batch(k) copies nothing.
#include <algorithm>
#include <deque>
#include <limits>
#include <set>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/indexed_iterator.h"
#include "sluice/pipeline/internal/stack.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class WindowIterator : public IteratorNode {
 public:
  WindowIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> input,
                 int64_t size, int64_t shift, int64_t stride, bool drop)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        shift_(shift),
        stride_(stride),
        span_((size - 1) * stride + 1),
        drop_(drop) {}
  ~WindowIterator() override { Clear(); }

  Status Save(StateWriter& w) override {
    w.Tag("window");
    w.I64(skip_);
    w.Bool(input_ended_);
    w.U64(buffer_.size());
    for (const Held& h : buffer_) SLUICE_RETURN_IF_ERROR(w.Elem(h.e));
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("window"));
    Clear();
    SLUICE_ASSIGN_OR_RETURN(skip_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    if (skip_ < 0 || skip_ > shift_ || n > static_cast<uint64_t>(span_)) {
      return Status::DataLoss("iterator state: stage '" + node_.name() + "' holds " +
                              std::to_string(n) + " elements and skips " + std::to_string(skip_) +
                              ", more than its window allows");
    }
    for (uint64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
      SLUICE_RETURN_IF_ERROR(Add(std::move(e)));
    }
    Publish();
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    if (stacked_ && shift_ == span_ && buffer_.empty() && skip_ == 0 && !input_ended_) {
      std::optional<NextResult> r = NextFromStacked();
      if (r) return std::move(*r);
    }
    while (skip_ > 0 && !input_ended_) {
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      // A failed element is consumed too: count it, then report it.
      NextResult e = input_->Next();
      --skip_;
      if (!e.ok()) return e.status();
      if (!e->has_value()) input_ended_ = true;
    }
    skip_ = 0;
    while (!input_ended_ && static_cast<int64_t>(buffer_.size()) < span_) {
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) {
        input_ended_ = true;
        break;
      }
      Status added = Add(std::move(*e));
      if (!added.ok()) {
        Publish();
        return added;
      }
    }
    if (buffer_.empty() || (drop_ && static_cast<int64_t>(buffer_.size()) < span_)) {
      Clear();
      return std::optional<Element>();
    }
    std::vector<Element> rows;
    const int64_t have = static_cast<int64_t>(buffer_.size());
    rows.reserve(static_cast<size_t>(1 + (have - 1) / stride_));
    // Rows no later window shares are moved out rather than copied.
    for (int64_t i = 0; i < have; i += stride_) {
      Element& e = buffer_[static_cast<size_t>(i)].e;
      rows.push_back(i < shift_ ? std::move(e) : e);
    }
    Result<Element> w = [&] {
      WorkTimer timer(this);
      return StackElements(rows, node_.name(), /*parallel=*/false);
    }();
    // Move on before reporting a failed window, so the next call (under
    // ignore_errors) gives the next window.
    if (shift_ >= have) {
      skip_ = shift_ - have;
      Clear();
    } else {
      for (int64_t i = 0; i < shift_; ++i) PopFront();
    }
    Publish();
    if (!w.ok()) return w.status();
    return std::optional<Element>(std::move(w).value());
  }

 private:
  // Consecutive windows that do not overlap, from an input that makes
  // stacked reads (a file source, from_window): the window is the input's
  // stacked rows (one piece: no copy at all). nullopt (and stacked_ off) if
  // the input does not make them.
  std::optional<NextResult> NextFromStacked() {
    std::vector<Element> pieces;
    int64_t have = 0;
    while (have < span_) {
      // Asked in bounded pieces: a huge window size reserves nothing.
      std::optional<NextResult> r = input_->NextStacked(std::min<int64_t>(span_ - have, 4096));
      if (!r) {
        if (!pieces.empty()) return NextResult(Status::Internal("stacked reads stopped"));
        stacked_ = false;
        return std::nullopt;
      }
      if (!r->ok()) return std::move(*r);
      if (!(*r)->has_value()) {
        input_ended_ = true;
        break;
      }
      have += StackedCount(***r);
      pieces.push_back(std::move(***r));
    }
    if (have == 0 || (drop_ && have < span_)) return NextResult(std::optional<Element>());
    if (pieces.size() == 1) return NextResult(std::optional<Element>(std::move(pieces[0])));
    Result<Element> w = [&] {
      WorkTimer timer(this);
      return ConcatBatches(pieces, node_.name());
    }();
    if (!w.ok()) return NextResult(w.status());
    return NextResult(std::optional<Element>(std::move(w).value()));
  }

  Status Add(Element e) {
    const int64_t b = ElementBytes(e);
    if (bytes_ + b > ctx()->memory().limit()) {
      return TooBigForBudget(node_.name(),
                             "a window span of " + std::to_string(span_) + " elements (" +
                                 std::to_string(buffer_.size() + 1) + " held)",
                             bytes_ + b, ctx()->memory().limit());
    }
    ctx()->memory().ChargeRequired(b);
    bytes_ += b;
    buffer_.push_back({std::move(e), b});
    return ctx()->memory().CheckRequired(node_.name());
  }
  void PopFront() {
    const int64_t b = buffer_.front().bytes;
    buffer_.pop_front();
    bytes_ -= b;
    ctx()->memory().ReleaseRequired(b);
  }
  void Clear() {
    ctx()->memory().ReleaseRequired(bytes_);
    bytes_ = 0;
    buffer_.clear();
    Publish();
  }
  // Stats: the buffer as it is now (once per call, not per element).
  void Publish() {
    counters()->buffered_bytes.fetch_add(bytes_ - published_, std::memory_order_relaxed);
    published_ = bytes_;
    counters()->buffer_depth.store(static_cast<int64_t>(buffer_.size()), std::memory_order_relaxed);
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const int64_t shift_, stride_, span_;
  const bool drop_;
  struct Held {
    Element e;
    int64_t bytes;  // charged
  };
  std::deque<Held> buffer_;  // the next window's span, from its first row
  int64_t skip_ = 0;         // input elements to drop before filling it
  bool input_ended_ = false;
  bool stacked_ = true;    // until the input says it makes no stacked reads
  int64_t bytes_ = 0;      // charged to the RAM budget
  int64_t published_ = 0;  // of bytes_, in the stage's stats
};

ElementSpec WindowSpec(const ElementSpec& in, int64_t dim0) {
  if (!in.known()) return ElementSpec::Unknown();
  std::vector<ComponentSpec> out = in.components();
  for (ComponentSpec& c : out) {
    if (!c.shape.unknown_rank()) c.shape = c.shape.Prepend(dim0);
  }
  return ElementSpec(std::move(out));
}

int64_t WindowCardinality(int64_t n, int64_t shift, int64_t span, bool drop) {
  if (n < 0) return n;
  if (drop) return n < span ? 0 : (n - span) / shift + 1;
  return n / shift + (n % shift == 0 ? 0 : 1);
}

class WindowNode : public DatasetNode {
 public:
  WindowNode(const Dataset& input, int64_t size, int64_t shift, int64_t stride, bool drop,
             std::string name)
      : DatasetNode("window", std::move(name), {input.node()},
                    WindowSpec(input.element_spec(), drop ? size : Shape::kUnknownDim),
                    WindowCardinality(input.cardinality(), shift, (size - 1) * stride + 1, drop)),
        size_(size),
        shift_(shift),
        stride_(stride),
        drop_(drop) {}
  std::string Describe() const override {
    std::string d = name() + "(" + std::to_string(size_);
    if (shift_ != size_ || stride_ != 1) d += ", " + std::to_string(shift_);
    if (stride_ != 1) d += ", " + std::to_string(stride_);
    return d + ")";
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(std::make_unique<WindowIterator>(
        ctx, *this, std::move(input), size_, shift_, stride_, drop_));
  }

 private:
  int64_t size_, shift_, stride_;
  bool drop_;
};

// ---- from_window ------------------------------------------------------------

class FromWindowIterator : public IndexedIterator {
 public:
  FromWindowIterator(IteratorContext& ctx, const DatasetNode& node, const Element& window)
      : IndexedIterator(ctx, node), window_(window) {}

 protected:
  std::optional<Result<Element>> FetchStacked(int64_t i, int64_t n) override {
    std::vector<Tensor> parts;
    parts.reserve(window_.size());
    for (const Tensor& t : window_.components()) {
      Result<Tensor> s = t.Slice(i, i + n);
      if (!s.ok()) return Result<Element>(s.status());
      parts.push_back(std::move(s).value());
    }
    Element out(std::move(parts), window_.shared_names());
    out.set_origin(window_.origin_source(), window_.origin_index());
    return Result<Element>(std::move(out));
  }

 private:
  const Element& window_;
};

class FromWindowNode : public DatasetNode {
 public:
  FromWindowNode(Element window, ElementSpec spec, int64_t n)
      : DatasetNode("from_window", "", {}, std::move(spec), n), window_(std::move(window)) {}
  std::string Describe() const override {
    return name() + "(" + std::to_string(cardinality()) + ")";
  }
  bool random_access() const override { return true; }
  Result<Element> Get(IteratorContext&, int64_t i) const override {
    std::vector<Tensor> row;
    row.reserve(window_.size());
    for (const Tensor& t : window_.components()) {
      SLUICE_ASSIGN_OR_RETURN(Tensor r, t.Row(i));
      row.push_back(std::move(r));
    }
    Element out(std::move(row), window_.shared_names());
    out.set_origin(window_.origin_source(), window_.origin_index());
    return out;
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override {
    return std::unique_ptr<IteratorNode>(std::make_unique<FromWindowIterator>(ctx, *this, window_));
  }

 private:
  Element window_;
};

}  // namespace

Dataset MakeWindow(const Dataset& input, int64_t size, WindowOptions o) {
  const int64_t shift = o.shift.value_or(size);
  auto bad = [](const std::string& what, int64_t v) {
    return Dataset::FromError(
        Status::InvalidArgument("window: " + what + " must be >= 1, got " + std::to_string(v)));
  };
  if (size < 1) return bad("size", size);
  if (shift < 1) return bad("shift", shift);
  if (o.stride < 1) return bad("stride", o.stride);
  if (size - 1 > (std::numeric_limits<int64_t>::max() - 1) / o.stride) {
    return Dataset::FromError(
        Status::InvalidArgument("window: the span (size - 1) * stride + 1 overflows: size " +
                                std::to_string(size) + ", stride " + std::to_string(o.stride)));
  }
  return Dataset(std::make_shared<WindowNode>(input, size, shift, o.stride, o.drop_remainder,
                                              std::move(o.name)));
}

Dataset MakeFromWindow(const Element& window) {
  if (window.empty()) {
    return Dataset::FromError(Status::InvalidArgument("from_window: the element is empty"));
  }
  std::vector<ComponentSpec> spec;
  std::string shapes;
  bool mismatch = false;
  for (size_t i = 0; i < window.size(); ++i) {
    const Tensor& t = window[i];
    if (i) shapes += ", ";
    shapes += ShapeSpecString(t.dtype(), t.shape());
    if (t.shape().rank() == 0) {
      return Dataset::FromError(Status::InvalidArgument(
          "from_window: component " + std::to_string(i) + " is a scalar (" +
          ShapeSpecString(t.dtype(), t.shape()) + "); a window's components have a row dimension"));
    }
    if (t.shape().dim(0) != window[0].shape().dim(0)) mismatch = true;
    spec.push_back({window.names()[i], t.dtype(), t.shape().Subshape(1)});
  }
  if (mismatch) {
    return Dataset::FromError(
        Status::InvalidArgument("from_window: the components' first dimensions differ: " + shapes));
  }
  const int64_t n = window[0].shape().dim(0);
  return Dataset(std::make_shared<FromWindowNode>(window, ElementSpec(std::move(spec)), n));
}

}  // namespace sluice::pipeline_internal

namespace sluice {

Dataset Dataset::window(int64_t size, WindowOptions options) const {
  if (!status().ok()) return *this;
  return pipeline_internal::MakeWindow(*this, size, std::move(options));
}

Dataset Dataset::from_window(const Element& window) {
  return pipeline_internal::MakeFromWindow(window);
}

bool ElementsAreWindows(const Dataset& ds) {
  static const std::set<std::string> kKeep = {"take",    "skip",          "shuffle",    "filter",
                                              "repeat",  "prefetch",      "cache",      "shard",
                                              "options", "ignore_errors", "concatenate"};
  std::vector<const pipeline_internal::DatasetNode*> todo;
  if (ds.node()) todo.push_back(ds.node().get());
  bool any = false;
  while (!todo.empty()) {
    const pipeline_internal::DatasetNode* n = todo.back();
    todo.pop_back();
    if (n->kind() == "window") {
      any = true;
      continue;
    }
    if (!kKeep.count(n->kind()) || n->inputs().empty()) return false;
    for (const auto& in : n->inputs()) todo.push_back(in.get());
  }
  return any;
}

}  // namespace sluice
