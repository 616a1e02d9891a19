// ignore_errors: skips elements whose production failed, counting them.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

// An input that fails this many times in a row without producing anything
// is taken to fail forever (a broken file re-reported on every call).
constexpr int64_t kMaxConsecutiveErrors = 1000;

class IgnoreErrorsIterator : public IteratorNode {
 public:
  IgnoreErrorsIterator(IteratorContext& ctx, const DatasetNode& node,
                       std::unique_ptr<IteratorNode> input)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), input_(std::move(input)) {}

  Status Save(StateWriter& w) override {
    w.Tag("ignore_errors");
    w.I64(consecutive_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("ignore_errors"));
    SLUICE_ASSIGN_OR_RETURN(consecutive_, r.I64());
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    for (;;) {
      NextResult r = input_->Next();
      if (r.ok()) {
        if (r->has_value()) consecutive_ = 0;
        return r;
      }
      if (r.status().code() == StatusCode::kCancelled || IsBudgetError(r.status()) ||
          ctx()->cancelled()) {
        return r;
      }
      Keep(r.status());
      if (++consecutive_ >= kMaxConsecutiveErrors) {
        consecutive_ = 0;
        return r.status().WithContext(
            "stage '" + node_.name() + "': the input failed " +
            std::to_string(kMaxConsecutiveErrors) +
            " times in a row without producing an element; giving up on the last error");
      }
    }
  }

 private:
  // Counts the error and keeps its message while there are few (stats).
  void Keep(const Status& s) {
    StageCounters* c = counters();
    if (c->errors_ignored.fetch_add(1, std::memory_order_relaxed) <
        static_cast<int64_t>(StageCounters::kKeptErrors)) {
      std::lock_guard<std::mutex> l(c->reason_mu);
      c->errors_kept.push_back(s.ToString());
    }
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  int64_t consecutive_ = 0;
};

class IgnoreErrorsNode : public DatasetNode {
 public:
  explicit IgnoreErrorsNode(const Dataset& input)
      : DatasetNode("ignore_errors", "", {input.node()}, input.element_spec(),
                    input.cardinality() == 0 || input.cardinality() == kInfiniteCardinality
                        ? input.cardinality()
                        : kUnknownCardinality) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<IgnoreErrorsIterator>(ctx, *this, std::move(input)));
  }
};

}  // namespace

Dataset MakeIgnoreErrors(const Dataset& input) {
  return Dataset(std::make_shared<IgnoreErrorsNode>(input));
}

}  // namespace sluice::pipeline_internal
