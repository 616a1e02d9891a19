// scan: tf.data's scan. fn(state, element) -> (new_state, output) from an
// initial state; the outputs are the elements. The state keeps the initial
// state's components and dtypes (shapes may change) and is saved with the
// iterator.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

// Empty unless `state` has the components and dtypes of `initial`.
std::string StructureDiff(const Element& state, const Element& initial) {
  if (state.size() != initial.size()) {
    return "the state has " + std::to_string(state.size()) + " components, the initial state " +
           std::to_string(initial.size());
  }
  for (size_t i = 0; i < initial.size(); ++i) {
    if (state[i].dtype() != initial[i].dtype()) {
      return "state component " + std::to_string(i) + " is " +
             std::string(DTypeName(state[i].dtype())) + ", the initial state's " +
             std::string(DTypeName(initial[i].dtype()));
    }
  }
  return "";
}

class ScanIterator : public IteratorNode {
 public:
  ScanIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> input,
               const Element& initial, const ScanFn& fn)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        initial_(initial),
        fn_(fn),
        state_(initial) {}

  Status Save(StateWriter& w) override {
    w.Tag("scan");
    w.I64(index_);
    SLUICE_RETURN_IF_ERROR(w.Elem(state_));
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("scan"));
    SLUICE_ASSIGN_OR_RETURN(index_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(Element state, r.Elem());
    if (std::string why = StructureDiff(state, initial_); !why.empty()) {
      return Status::DataLoss("iterator state: stage '" + node_.name() +
                              "' saved a state of another structure: " + why);
    }
    state_ = std::move(state);
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->Next());
    if (!in) return in;
    const int64_t index = index_;
    auto origin = in->origin_source();
    const int64_t origin_index = in->origin_index();
    Result<std::pair<Element, Element>> out = [&] {
      WorkTimer timer(this);
      return fn_(state_, std::move(*in));
    }();
    if (!out.ok()) return StageError(out.status(), node_.name(), index, origin, origin_index);
    if (std::string why = StructureDiff(out->first, initial_); !why.empty()) {
      return StageError(
          Status::InvalidArgument("the function returned a state of another structure (" + why +
                                  "); scan's state must keep its components and dtypes"),
          node_.name(), index, origin, origin_index);
    }
    ++index_;
    state_ = std::move(out->first);
    Element result = std::move(out->second);
    if (result.origin_index() < 0 && !result.origin_source())
      result.set_origin(origin, origin_index);
    return std::optional<Element>(std::move(result));
  }

 private:
  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const Element& initial_;
  const ScanFn& fn_;
  Element state_;
  int64_t index_ = 0;  // input elements consumed
};

class ScanNode : public DatasetNode {
 public:
  ScanNode(const Dataset& input, Element initial, ScanFn fn, ScanOptions o)
      : DatasetNode("scan", o.name, {input.node()}, ElementSpec::Unknown(), input.cardinality()),
        initial_(std::move(initial)),
        fn_(std::move(fn)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<ScanIterator>(ctx, *this, std::move(input), initial_, fn_));
  }

 private:
  Element initial_;
  ScanFn fn_;
};

}  // namespace

Dataset MakeScan(const Dataset& input, Element initial_state, ScanFn fn, ScanOptions options) {
  if (!fn) return Dataset::FromError(Status::InvalidArgument("scan: the function is empty"));
  return Dataset(std::make_shared<ScanNode>(input, std::move(initial_state), std::move(fn),
                                            std::move(options)));
}

}  // namespace sluice::pipeline_internal
