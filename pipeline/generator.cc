// from_generator: elements from a user function, called once per iterator.
// Not random access; cardinality unknown. Save/restore replays: the state is
// the number of elements produced, and restore skips that many elements of
// a fresh generator (so the generator must be deterministic).
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class GeneratorNode;

class GeneratorIterator : public IteratorNode {
 public:
  GeneratorIterator(IteratorContext& ctx, const DatasetNode& node, GeneratorFn gen,
                    const std::function<GeneratorFn()>& make)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        gen_(std::move(gen)),
        make_(make) {}

  Status Save(StateWriter& w) override {
    w.Tag("from_generator");
    w.I64(produced_);
    w.Bool(done_);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("from_generator"));
    SLUICE_ASSIGN_OR_RETURN(int64_t produced, r.I64());
    SLUICE_ASSIGN_OR_RETURN(bool done, r.Bool());
    if (produced < 0) return Status::DataLoss("iterator state: negative from_generator count");
    gen_ = make_();
    produced_ = 0;
    done_ = false;
    while (produced_ < produced) {
      if (ctx()->cancelled()) return Status::Cancelled("from_generator: restore cancelled");
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, Produce());
      if (!e) {
        return Status::FailedPrecondition(
            "from_generator: cannot restore: the generator ended after " +
            std::to_string(produced_) + " elements but the checkpoint had produced " +
            std::to_string(produced) + " (the generator must be deterministic)");
      }
    }
    done_ = done;
    return Status::OK();
  }

 protected:
  NextResult GetNext() override { return Produce(); }

 private:
  NextResult Produce() {
    if (done_) return std::optional<Element>();
    if (!gen_) {
      return Status::FailedPrecondition("stage '" + node_.name() +
                                        "': make() returned an empty generator");
    }
    Result<std::optional<Element>> r = gen_();
    if (!r.ok()) return StageError(r.status(), node_.name(), produced_, nullptr, -1);
    if (!r->has_value()) {
      done_ = true;
      return std::optional<Element>();
    }
    if (node_.spec().known()) {
      Status s = node_.spec().Check(**r);
      if (!s.ok()) {
        return StageError(
            Status::InvalidArgument(std::string(s.message()))
                .WithContext("the generator's element does not match the declared spec"),
            node_.name(), produced_, nullptr, -1);
      }
    }
    ++produced_;
    return r;
  }

  const DatasetNode& node_;
  GeneratorFn gen_;
  const std::function<GeneratorFn()>& make_;
  int64_t produced_ = 0;
  bool done_ = false;
};

class GeneratorNode : public DatasetNode {
 public:
  GeneratorNode(std::function<GeneratorFn()> make, ElementSpec spec)
      : DatasetNode("from_generator", "", {}, std::move(spec), kUnknownCardinality),
        make_(std::move(make)) {}
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override {
    return std::unique_ptr<IteratorNode>(
        std::make_unique<GeneratorIterator>(ctx, *this, make_(), make_));
  }

 private:
  std::function<GeneratorFn()> make_;
};

}  // namespace

Dataset MakeFromGenerator(std::function<GeneratorFn()> make, ElementSpec spec) {
  if (!make) return Dataset::FromError(Status::InvalidArgument("from_generator: make is empty"));
  return Dataset(std::make_shared<GeneratorNode>(std::move(make), std::move(spec)));
}

}  // namespace sluice::pipeline_internal
