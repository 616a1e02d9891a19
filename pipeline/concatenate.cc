// concatenate: the first dataset's elements, then the second's.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

int64_t ConcatCardinality(int64_t a, int64_t b) {
  if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
  if (a < 0 || b < 0) return kUnknownCardinality;
  return a + b;
}

class ConcatenateIterator : public IteratorNode {
 public:
  ConcatenateIterator(IteratorContext& ctx, const DatasetNode& node, const IteratorParams& params,
                      std::unique_ptr<IteratorNode> first)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        params_(params),
        input_(std::move(first)) {}

  Status Save(StateWriter& w) override {
    w.Tag("concatenate");
    w.U64(params_.iteration);  // inputs made later derive from it
    w.I64(phase_);
    w.Bool(input_ != nullptr);
    if (input_) return input_->Save(w);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("concatenate"));
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    SLUICE_ASSIGN_OR_RETURN(int64_t phase, r.I64());
    SLUICE_ASSIGN_OR_RETURN(bool has_input, r.Bool());
    if (phase < 0 || phase > 2) return Status::DataLoss("iterator state: bad concatenate phase");
    SLUICE_RETURN_IF_ERROR(Start(phase));
    if (!has_input) {
      input_.reset();
      return Status::OK();
    }
    if (!input_) return Status::DataLoss("iterator state: concatenate past its end");
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    while (input_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (e) return e;
      SLUICE_RETURN_IF_ERROR(Start(phase_ + 1));
    }
    return std::optional<Element>();
  }

 private:
  // Opens input `phase` (0 or 1); 2: the end.
  Status Start(int64_t phase) {
    input_.reset();
    phase_ = phase;
    if (phase_ >= 2) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(input_, MakeIteratorOf(*node_.inputs()[phase_], *ctx(), params_));
    return Status::OK();
  }

  const DatasetNode& node_;
  IteratorParams params_;  // iteration restored from saved state
  std::unique_ptr<IteratorNode> input_;
  int64_t phase_ = 0;
};

class ConcatenateNode : public DatasetNode {
 public:
  ConcatenateNode(const Dataset& a, const Dataset& b, ElementSpec spec)
      : DatasetNode("concatenate", "", {a.node(), b.node()}, std::move(spec),
                    ConcatCardinality(a.cardinality(), b.cardinality())) {}
  bool random_access() const override {
    return cardinality() >= 0 && inputs()[0]->random_access() && inputs()[1]->random_access();
  }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    const int64_t n = inputs()[0]->cardinality();
    return i < n ? inputs()[0]->Get(ctx, i) : inputs()[1]->Get(ctx, i - n);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto first, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<ConcatenateIterator>(ctx, *this, params, std::move(first)));
  }
};

}  // namespace

Dataset MakeConcatenate(const Dataset& a, const Dataset& b) {
  if (!b.status().ok()) return b;
  Result<ElementSpec> spec = a.element_spec().MostSpecificCompatible(b.element_spec());
  if (!spec.ok()) {
    return Dataset::FromError(spec.status().WithContext(
        "concatenate: the datasets' element specs " + a.element_spec().DebugString() + " and " +
        b.element_spec().DebugString() + " are incompatible"));
  }
  return Dataset(std::make_shared<ConcatenateNode>(a, b, std::move(spec).value()));
}

}  // namespace sluice::pipeline_internal
