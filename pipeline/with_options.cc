// with_options: a pass-through node carrying pipeline Options.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice::pipeline_internal {
namespace {

class OptionsNode : public DatasetNode {
 public:
  OptionsNode(const Dataset& input, Options o)
      : DatasetNode("options", "", {input.node()}, input.element_spec(), input.cardinality()),
        o_(std::move(o)) {}
  const Options* options() const override { return &o_; }
  bool random_access() const override { return inputs()[0]->random_access(); }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    return inputs()[0]->Get(ctx, i);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    // No stage of its own at run time: the input's iterator is returned.
    return MakeIteratorOf(*inputs()[0], ctx, params);
  }

 private:
  Options o_;
};

}  // namespace

Dataset MakeWithOptions(const Dataset& input, Options options) {
  return Dataset(std::make_shared<OptionsNode>(input, std::move(options)));
}

}  // namespace sluice::pipeline_internal
