// batch: stacks batch_size consecutive elements. A map input places its
// rows into the batch's buffer (map-and-batch fusion, RowPlacer).
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stack.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

ElementSpec BatchedSpec(const ElementSpec& in, int64_t dim0) {
  if (!in.known()) return ElementSpec::Unknown();
  std::vector<ComponentSpec> out = in.components();
  for (ComponentSpec& c : out) {
    if (!c.shape.unknown_rank()) c.shape = c.shape.Prepend(dim0);
  }
  return ElementSpec(std::move(out));
}

class BatchIterator : public IteratorNode {
 public:
  BatchIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> input,
                int64_t bs, BatchOptions o)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        bs_(bs),
        o_(std::move(o)) {}

  Status Save(StateWriter& w) override {
    w.Tag("batch");
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("batch"));
    return input_->Restore(r);
  }
  bool positional() const override { return input_->positional(); }
  int64_t position() const override { return (input_->position() + bs_ - 1) / bs_; }
  Status SeekTo(int64_t n) override { return input_->SeekTo(n * bs_); }

 protected:
  NextResult GetNext() override {
    if (stacked_) {
      std::optional<NextResult> r = NextFromStacked();
      if (r) return std::move(*r);
    }
    std::vector<Element> rows;
    rows.reserve(static_cast<size_t>(bs_));
    input_->ExpectNext(bs_);
    while (static_cast<int64_t>(rows.size()) < bs_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) break;
      rows.push_back(std::move(*e));
    }
    if (rows.empty() || (o_.drop_remainder && static_cast<int64_t>(rows.size()) < bs_)) {
      return std::optional<Element>();
    }
    Result<Element> b = [&] {
      WorkTimer timer(this);
      return StackElements(rows, node_.name(), o_.parallel_copy);
    }();
    if (!b.ok()) return b.status();
    return std::optional<Element>(std::move(b).value());
  }

 private:
  // The batch from the input's stacked reads, or nullopt (and stacked_ off)
  // if the input does not make them.
  std::optional<NextResult> NextFromStacked() {
    std::vector<Element> pieces;
    int64_t have = 0;
    while (have < bs_) {
      std::optional<NextResult> r = input_->NextStacked(bs_ - have);
      if (!r) {
        if (!pieces.empty()) return NextResult(Status::Internal("stacked reads stopped"));
        stacked_ = false;
        return std::nullopt;
      }
      if (!r->ok()) return std::move(*r);
      if (!(*r)->has_value()) break;
      have += StackedCount(***r);
      pieces.push_back(std::move(***r));
    }
    if (have == 0 || (o_.drop_remainder && have < bs_)) return NextResult(std::optional<Element>());
    if (pieces.size() == 1) return NextResult(std::optional<Element>(std::move(pieces[0])));
    Result<Element> b = [&] {
      WorkTimer timer(this);
      return ConcatBatches(pieces, node_.name());
    }();
    if (!b.ok()) return NextResult(b.status());
    return NextResult(std::optional<Element>(std::move(b).value()));
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const int64_t bs_;
  const BatchOptions o_;
  bool stacked_ = true;  // until the input says it does not make stacked reads
};

class BatchNode : public DatasetNode {
 public:
  BatchNode(const Dataset& input, int64_t bs, BatchOptions o)
      : DatasetNode("batch", o.name, {input.node()},
                    BatchedSpec(input.element_spec(), o.drop_remainder ? bs : Shape::kUnknownDim),
                    BatchedCardinality(input.cardinality(), bs, o.drop_remainder)),
        bs_(bs),
        o_(std::move(o)) {}
  std::string Describe() const override { return name() + "(" + std::to_string(bs_) + ")"; }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    IteratorParams p = params;
    // Not for batch(huge) over a few elements ("all in one batch"): the
    // buffer would be sized for bs_ rows.
    const int64_t n = inputs()[0]->cardinality();
    if (inputs()[0]->places_rows() && ctx.map_and_batch_fusion() && (n < 0 || n >= bs_)) {
      p.rows_per_batch = bs_;
    }
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, p));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<BatchIterator>(ctx, *this, std::move(input), bs_, o_));
  }

 private:
  int64_t bs_;
  BatchOptions o_;
};

}  // namespace

Dataset MakeBatch(const Dataset& input, int64_t batch_size, BatchOptions options) {
  if (batch_size < 1) {
    return Dataset::FromError(Status::InvalidArgument("batch: batch_size must be >= 1, got " +
                                                      std::to_string(batch_size)));
  }
  if (std::optional<Dataset> fused = input.node()->FuseWithBatch(batch_size, options)) {
    return *fused;
  }
  return Dataset(std::make_shared<BatchNode>(input, batch_size, std::move(options)));
}

}  // namespace sluice::pipeline_internal
