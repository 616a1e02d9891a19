// filter: keeps the elements for which the predicate returns true.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class FilterIterator : public IteratorNode {
 public:
  FilterIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> input,
                 const PredicateFn& pred)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        pred_(pred) {}

  Status Save(StateWriter& w) override {
    w.Tag("filter");
    w.I64(index_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("filter"));
    SLUICE_ASSIGN_OR_RETURN(index_, r.I64());
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    for (;;) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->Next());
      if (!in) return in;
      const int64_t index = index_++;
      Result<bool> keep = [&] {
        WorkTimer timer(this);
        return pred_(*in);
      }();
      if (!keep.ok()) {
        return StageError(keep.status(), node_.name(), index, in->origin_source(),
                          in->origin_index());
      }
      if (*keep) return in;
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
    }
  }

 private:
  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const PredicateFn& pred_;
  int64_t index_ = 0;  // input elements seen
};

class FilterNode : public DatasetNode {
 public:
  FilterNode(const Dataset& input, PredicateFn pred, FilterOptions o)
      : DatasetNode("filter", o.name, {input.node()}, input.element_spec(),
                    input.cardinality() == 0 || input.cardinality() == kInfiniteCardinality
                        ? input.cardinality()
                        : kUnknownCardinality),
        pred_(std::move(pred)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<FilterIterator>(ctx, *this, std::move(input), pred_));
  }

 private:
  PredicateFn pred_;
};

}  // namespace

Dataset MakeFilter(const Dataset& input, PredicateFn pred, FilterOptions options) {
  if (!pred) return Dataset::FromError(Status::InvalidArgument("filter: the predicate is empty"));
  return Dataset(std::make_shared<FilterNode>(input, std::move(pred), std::move(options)));
}

}  // namespace sluice::pipeline_internal
