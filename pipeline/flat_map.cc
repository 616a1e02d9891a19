// flat_map: fn maps each element to a dataset; their elements follow one
// another.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/pipeline/internal/sub_dataset.h"

namespace sluice::pipeline_internal {
namespace {

class FlatMapIterator : public IteratorNode {
 public:
  FlatMapIterator(IteratorContext& ctx, const DatasetNode& node, const IteratorParams& params,
                  std::unique_ptr<IteratorNode> input, const DatasetFn& fn)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        params_(params),
        input_(std::move(input)),
        fn_(fn) {}

  Status Save(StateWriter& w) override {
    w.Tag("flat_map");
    w.U64(params_.iteration);  // sub-datasets' iterations derive from it
    w.I64(index_);
    SLUICE_RETURN_IF_ERROR(input_->Save(w));
    w.Bool(current_ != nullptr);
    if (current_) {
      SLUICE_RETURN_IF_ERROR(w.Elem(producer_));
      SLUICE_RETURN_IF_ERROR(current_->Save(w));
    }
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("flat_map"));
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    SLUICE_ASSIGN_OR_RETURN(index_, r.I64());
    SLUICE_RETURN_IF_ERROR(input_->Restore(r));
    current_.reset();
    SLUICE_ASSIGN_OR_RETURN(bool has, r.Bool());
    if (has) {
      SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
      SLUICE_RETURN_IF_ERROR(Open(std::move(e), index_ - 1));
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
        current_.reset();
      }
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->Next());
      if (!in) return in;
      SLUICE_RETURN_IF_ERROR(Open(std::move(*in), index_++));
    }
  }

 private:
  // Makes the sub-iterator of the dataset fn(e).
  Status Open(Element e, int64_t index) {
    current_.reset();
    dataset_.reset();
    const int64_t t0 = NowNs();
    Result<SubIterator> sub = OpenSubDataset(fn_, e, index, *ctx(), params_, node_);
    counters()->busy_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed);
    counters()->total_ns.fetch_sub(NowNs() - t0, std::memory_order_relaxed);
    if (!sub.ok()) return sub.status();
    dataset_ = std::move(sub->dataset);
    current_ = std::move(sub->it);
    producer_ = std::move(e);
    return Status::OK();
  }

  const DatasetNode& node_;
  IteratorParams params_;  // iteration restored from saved state
  std::unique_ptr<IteratorNode> input_;
  const DatasetFn& fn_;
  int64_t index_ = 0;  // input elements taken
  Element producer_;
  // The current sub-dataset, declared before its iterator so that it
  // outlives it.
  std::optional<SubDataset> dataset_;
  std::unique_ptr<IteratorNode> current_;
};

class FlatMapNode : public DatasetNode {
 public:
  FlatMapNode(const Dataset& input, DatasetFn fn)
      : DatasetNode("flat_map", "", {input.node()}, ElementSpec::Unknown(),
                    input.cardinality() == 0 ? 0 : kUnknownCardinality),
        fn_(std::move(fn)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<FlatMapIterator>(ctx, *this, params, std::move(input), fn_));
  }

 private:
  DatasetFn fn_;
};

}  // namespace

Dataset MakeFlatMap(const Dataset& input, DatasetFn fn) {
  if (!fn) return Dataset::FromError(Status::InvalidArgument("flat_map: the function is empty"));
  return Dataset(std::make_shared<FlatMapNode>(input, std::move(fn)));
}

}  // namespace sluice::pipeline_internal
