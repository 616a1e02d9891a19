// with_options: a pass-through node carrying pipeline Options.
#include <optional>
#include <string>
#include <vector>

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
  // "options(seed=1, cpu_budget=2)": the fields set here.
  std::string Describe() const override {
    std::vector<std::string> set;
    auto flag = [&](const char* name, const std::optional<bool>& v) {
      if (v) set.push_back(std::string(name) + (*v ? "=true" : "=false"));
    };
    auto number = [&](const char* name, const auto& v) {
      if (v) set.push_back(std::string(name) + "=" + std::to_string(*v));
    };
    flag("deterministic", o_.deterministic);
    number("seed", o_.seed);
    number("cpu_budget", o_.cpu_budget);
    number("max_threads", o_.max_threads);
    number("ram_budget", o_.ram_budget);
    flag("autotune", o_.autotune);
    flag("map_and_batch_fusion", o_.map_and_batch_fusion);
    if (set.empty()) return name();
    std::string d = name() + "(";
    for (size_t i = 0; i < set.size(); ++i) d += (i ? ", " : "") + set[i];
    return d + ")";
  }
  bool random_access() const override { return inputs()[0]->random_access(); }
  // Pass-through: map -> with_options -> batch fuses as map -> batch.
  bool places_rows() const override { return inputs()[0]->places_rows(); }
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
