// choose_from_datasets: element k comes from datasets[c_k], c_k the k-th
// element of the choice dataset (int64 scalars), tf.data's
// choose_from_datasets. A choice of an exhausted input ends the mixture
// (stop_on_empty_dataset, the default) or is skipped; the mixture also ends
// when the choices do or every input is exhausted. A choice outside
// [0, len(datasets)) is InvalidArgument naming it and its position (the
// next call goes on with the next choice).
//
// State: the choices read, which inputs were found exhausted, whether it
// ended, then the choice iterator's and every input's state.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/mixing.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

constexpr char kStage[] = "choose_from_datasets";

class ChooseIterator : public IteratorNode {
 public:
  ChooseIterator(IteratorContext& ctx, const DatasetNode& node, bool stop_on_empty,
                 std::unique_ptr<IteratorNode> choice,
                 std::vector<std::unique_ptr<IteratorNode>> inputs)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        stop_(stop_on_empty),
        choice_(std::move(choice)),
        inputs_(std::move(inputs)),
        dead_(inputs_.size(), 0),
        live_(static_cast<int64_t>(inputs_.size())) {}

  Status Save(StateWriter& w) override {
    w.Tag(kStage);
    w.U64(inputs_.size());
    w.I64(choices_);
    w.Bool(ended_);
    for (char d : dead_) w.Bool(d != 0);
    SLUICE_RETURN_IF_ERROR(choice_->Save(w));
    for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Save(w));
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag(kStage));
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    if (n != inputs_.size()) {
      return Status::InvalidArgument("iterator state: saved by a " + std::string(kStage) + " of " +
                                     std::to_string(n) + " datasets; '" + node_.name() +
                                     "' chooses from " + std::to_string(inputs_.size()));
    }
    SLUICE_ASSIGN_OR_RETURN(choices_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(ended_, r.Bool());
    live_ = 0;
    for (char& d : dead_) {
      SLUICE_ASSIGN_OR_RETURN(bool dead, r.Bool());
      d = dead ? 1 : 0;
      live_ += dead ? 0 : 1;
    }
    SLUICE_RETURN_IF_ERROR(choice_->Restore(r));
    for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Restore(r));
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    while (!ended_) {
      if (ctx()->cancelled()) return Status::Cancelled(node_.name() + ": cancelled");
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> c, choice_->Next());
      if (!c) break;
      const int64_t at = choices_++;
      if (c->size() != 1 || (*c)[0].dtype() != DType::kInt64 || (*c)[0].shape().rank() != 0) {
        return Status::InvalidArgument(node_.name() + ": choice " + std::to_string(at) +
                                       " must be an int64 scalar, got " + c->DebugString(3));
      }
      const int64_t v = (*c)[0].scalar<int64_t>();
      if (v < 0 || v >= static_cast<int64_t>(inputs_.size())) {
        return Status::InvalidArgument(node_.name() + ": choice " + std::to_string(at) + " is " +
                                       std::to_string(v) + ", outside [0, " +
                                       std::to_string(inputs_.size()) + ")");
      }
      const size_t j = static_cast<size_t>(v);
      if (dead_[j]) continue;  // only without stop_on_empty_dataset
      NextResult r = inputs_[j]->Next();
      if (!r.ok() || r->has_value()) return r;
      dead_[j] = 1;
      if (stop_ || --live_ == 0) break;
    }
    ended_ = true;
    return std::optional<Element>();
  }

 private:
  const DatasetNode& node_;
  const bool stop_;
  std::unique_ptr<IteratorNode> choice_;
  std::vector<std::unique_ptr<IteratorNode>> inputs_;
  std::vector<char> dead_;  // inputs found exhausted
  int64_t live_;
  int64_t choices_ = 0;  // choice elements read
  bool ended_ = false;
};

class ChooseNode : public DatasetNode {
 public:
  ChooseNode(std::vector<std::shared_ptr<const DatasetNode>> nodes, ElementSpec spec,
             int64_t cardinality, ChooseFromDatasetsOptions o)
      : DatasetNode(kStage, o.name, std::move(nodes), std::move(spec), cardinality),
        options_(std::move(o)) {}
  std::string Describe() const override {
    return name() + "(" + std::to_string(inputs().size() - 1) + " datasets)";
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto choice, MakeIteratorOf(*inputs()[0], ctx, params));
    std::vector<std::unique_ptr<IteratorNode>> its;
    for (size_t j = 1; j < inputs().size(); ++j) {
      SLUICE_ASSIGN_OR_RETURN(auto it, MakeIteratorOf(*inputs()[j], ctx, params));
      its.push_back(std::move(it));
    }
    return std::unique_ptr<IteratorNode>(std::make_unique<ChooseIterator>(
        ctx, *this, options_.stop_on_empty_dataset, std::move(choice), std::move(its)));
  }

 private:
  ChooseFromDatasetsOptions options_;
};

}  // namespace

Dataset MakeChooseFromDatasets(std::vector<Dataset> inputs, Dataset choice,
                               ChooseFromDatasetsOptions options) {
  if (inputs.empty()) {
    return Dataset::FromError(Status::InvalidArgument(std::string(kStage) + ": no datasets given"));
  }
  for (const Dataset& d : inputs) {
    if (!d.status().ok()) return d;
  }
  if (!choice.status().ok()) return choice;
  const ElementSpec& cs = choice.element_spec();
  if (cs.known() && (cs.components().size() != 1 || cs.components()[0].dtype != DType::kInt64 ||
                     cs.components()[0].shape.rank() != 0)) {
    return Dataset::FromError(Status::InvalidArgument(
        std::string(kStage) + ": choice_dataset's elements must be int64 scalars, got " +
        cs.DebugString()));
  }
  Result<ElementSpec> spec = MixedSpec(inputs, kStage);
  if (!spec.ok()) return Dataset::FromError(spec.status());
  // Exact when no input can run out: one element per choice.
  int64_t card = kUnknownCardinality;
  const bool all_infinite = std::all_of(inputs.begin(), inputs.end(), [](const Dataset& d) {
    return d.cardinality() == kInfiniteCardinality;
  });
  if (choice.cardinality() == 0) {
    card = 0;
  } else if (all_infinite) {
    card = choice.cardinality();
  }
  std::vector<std::shared_ptr<const DatasetNode>> nodes{choice.node()};
  for (const Dataset& d : inputs) nodes.push_back(d.node());
  return Dataset(
      std::make_shared<ChooseNode>(std::move(nodes), std::move(spec).value(), card, options));
}

}  // namespace sluice::pipeline_internal
