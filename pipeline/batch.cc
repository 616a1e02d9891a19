// batch: stacks batch_size consecutive elements. A map input places its
// rows into the batch's buffer (map-and-batch fusion, RowPlacer).
//
// RAM: the rows a batch collects are charged as it takes them (they left
// the input's buffers, or were made for it), and from the first row on the
// stage keeps room reserved for one stacked batch (batch_size x the largest
// row; none when fused, where the rows already are the batch), so read-ahead
// below leaves it free. A batch that cannot fit in the whole budget is
// ResourceExhausted naming the sizes.
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
                int64_t bs, BatchOptions o, bool fused)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        bs_(bs),
        o_(std::move(o)),
        fused_(fused) {}
  ~BatchIterator() override { ctx()->memory().ReleaseRequired(reserved_); }

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
    ScopedCharge charge(ctx()->memory());
    input_->ExpectNext(bs_);
    while (static_cast<int64_t>(rows.size()) < bs_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) break;
      const int64_t b = ElementBytes(*e);
      charge.Add(b);
      rows.push_back(std::move(*e));
      SLUICE_RETURN_IF_ERROR(ReserveFor(b));
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

  // A row of `b` bytes was taken: the reservation for the stacked batch
  // follows the largest row, and a batch that cannot fit is an error.
  Status ReserveFor(int64_t b) {
    if (b <= row_est_) return Status::OK();
    row_est_ = b;
    const int64_t limit = ctx()->memory().limit();
    const int64_t rows = bs_ * row_est_;
    const int64_t need = fused_ ? rows : 2 * rows;
    if (need > limit) {
      return TooBigForBudget(node_.name(),
                             "a batch of " + std::to_string(bs_) + " rows of up to " +
                                 ByteSize(row_est_) +
                                 (fused_ ? "" : ", with its rows while it is stacked,"),
                             need, limit);
    }
    const int64_t want = fused_ ? 0 : rows;
    if (want > reserved_) {
      ctx()->memory().ChargeRequired(want - reserved_);
      reserved_ = want;
    }
    return ctx()->memory().CheckRequired(node_.name());
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const int64_t bs_;
  const BatchOptions o_;
  const bool fused_;      // the map below places rows into the batch's buffer
  int64_t row_est_ = 0;   // the largest row taken
  int64_t reserved_ = 0;  // charged for the stacked output
  bool stacked_ = true;   // until the input says it does not make stacked reads
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
    return std::unique_ptr<IteratorNode>(std::make_unique<BatchIterator>(
        ctx, *this, std::move(input), bs_, o_, p.rows_per_batch > 0));
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
