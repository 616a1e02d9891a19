// take_while: tf.data's take_while. The elements up to (not including) the
// first one for which the predicate is false; the input is not read after it.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class TakeWhileIterator : public IteratorNode {
 public:
  TakeWhileIterator(IteratorContext& ctx, const DatasetNode& node,
                    std::unique_ptr<IteratorNode> input, const PredicateFn& pred)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        pred_(pred) {}

  Status Save(StateWriter& w) override {
    w.Tag("take_while");
    w.I64(index_);
    w.Bool(done_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("take_while"));
    SLUICE_ASSIGN_OR_RETURN(index_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(done_, r.Bool());
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    if (done_) return std::optional<Element>();
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->Next());
    if (!in) {
      done_ = true;
      return in;
    }
    Result<bool> keep = [&] {
      WorkTimer timer(this);
      return pred_(*in);
    }();
    if (!keep.ok()) {
      return StageError(keep.status(), node_.name(), index_, in->origin_source(),
                        in->origin_index());
    }
    ++index_;
    if (!*keep) {
      done_ = true;
      return std::optional<Element>();
    }
    return in;
  }

 private:
  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const PredicateFn& pred_;
  int64_t index_ = 0;  // input elements tested
  bool done_ = false;
};

class TakeWhileNode : public DatasetNode {
 public:
  TakeWhileNode(const Dataset& input, PredicateFn pred, TakeWhileOptions o)
      : DatasetNode("take_while", o.name, {input.node()}, input.element_spec(),
                    input.cardinality() == 0 ? 0 : kUnknownCardinality),
        pred_(std::move(pred)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<TakeWhileIterator>(ctx, *this, std::move(input), pred_));
  }

 private:
  PredicateFn pred_;
};

}  // namespace

Dataset MakeTakeWhile(const Dataset& input, PredicateFn pred, TakeWhileOptions options) {
  if (!pred) {
    return Dataset::FromError(Status::InvalidArgument("take_while: the predicate is empty"));
  }
  return Dataset(std::make_shared<TakeWhileNode>(input, std::move(pred), std::move(options)));
}

}  // namespace sluice::pipeline_internal
