// repeat: count epochs of the input (forever if count < 0). Each epoch is a
// fresh input iterator with its own iteration number, so shuffles with
// reshuffle_each_iteration give each epoch a new order.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class RepeatNode;

class RepeatIterator : public IteratorNode {
 public:
  RepeatIterator(IteratorContext& ctx, const DatasetNode& node, const IteratorParams& params,
                 int64_t count)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), params_(params), count_(count) {}

  Status Start(int64_t epoch) {
    input_.reset();
    epoch_ = epoch;
    if (count_ >= 0 && epoch_ >= count_) return Status::OK();
    IteratorParams p;
    p.iteration = MixSeed(params_.iteration, static_cast<uint64_t>(epoch_));
    SLUICE_ASSIGN_OR_RETURN(input_, MakeIteratorOf(*node_.inputs()[0], *ctx(), p));
    return Status::OK();
  }

  Status Save(StateWriter& w) override {
    w.Tag("repeat");
    w.U64(params_.iteration);  // each epoch's iteration derives from it
    w.I64(epoch_);
    w.Bool(input_ != nullptr);
    w.Bool(epoch_had_elements_);
    if (input_) return input_->Save(w);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("repeat"));
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    SLUICE_ASSIGN_OR_RETURN(int64_t epoch, r.I64());
    SLUICE_ASSIGN_OR_RETURN(bool has_input, r.Bool());
    SLUICE_ASSIGN_OR_RETURN(epoch_had_elements_, r.Bool());
    if (epoch < 0) return Status::DataLoss("iterator state: negative repeat epoch");
    SLUICE_RETURN_IF_ERROR(Start(epoch));
    if (!has_input) {
      input_.reset();
      return Status::OK();
    }
    if (!input_) return Status::DataLoss("iterator state: repeat epoch past the count");
    return input_->Restore(r);
  }
  bool positional() const override {
    const int64_t c = node_.inputs()[0]->cardinality();
    return c > 0 && (!input_ || input_->positional());
  }
  int64_t position() const override {
    const int64_t c = node_.inputs()[0]->cardinality();
    return epoch_ * c + (input_ ? input_->position() : 0);
  }
  Status SeekTo(int64_t n) override {
    const int64_t c = node_.inputs()[0]->cardinality();
    if (n / c != epoch_ || !input_) SLUICE_RETURN_IF_ERROR(Start(n / c));
    epoch_had_elements_ = true;
    return input_ ? input_->SeekTo(n % c) : Status::OK();
  }

 protected:
  NextResult GetNext() override {
    for (;;) {
      if (!input_) return std::optional<Element>();
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (e) {
        epoch_had_elements_ = true;
        return e;
      }
      // An empty epoch would repeat forever: stop instead, as tf.data does.
      if (!epoch_had_elements_) {
        input_.reset();
        return std::optional<Element>();
      }
      epoch_had_elements_ = false;
      SLUICE_RETURN_IF_ERROR(Start(epoch_ + 1));
    }
  }

  // Forwards stacked reads; a batch may end at an epoch's end (the caller
  // asks again and gets the next epoch's first elements).
  std::optional<NextResult> GetNextStacked(int64_t n) override {
    for (;;) {
      if (!input_) return NextResult(std::optional<Element>());
      std::optional<NextResult> r = input_->NextStacked(n);
      if (!r || !r->ok() || (*r)->has_value()) {
        if (r && r->ok()) epoch_had_elements_ = true;
        return r;
      }
      if (!epoch_had_elements_) {
        input_.reset();
        return NextResult(std::optional<Element>());
      }
      epoch_had_elements_ = false;
      Status s = Start(epoch_ + 1);
      if (!s.ok()) return NextResult(s);
    }
  }

 private:
  const DatasetNode& node_;
  IteratorParams params_;  // iteration restored from saved state
  const int64_t count_;
  std::unique_ptr<IteratorNode> input_;
  int64_t epoch_ = 0;
  bool epoch_had_elements_ = false;
};

int64_t RepeatCardinality(int64_t n, int64_t count) {
  if (count == 0 || n == 0) return 0;
  if (n == kInfiniteCardinality) return n;
  if (count < 0) return n == kUnknownCardinality ? n : kInfiniteCardinality;
  if (n < 0) return n;
  return n * count;
}

class RepeatNode : public DatasetNode {
 public:
  RepeatNode(const Dataset& input, int64_t count)
      : DatasetNode("repeat", "", {input.node()}, input.element_spec(),
                    RepeatCardinality(input.cardinality(), count)),
        count_(count) {}
  std::string Describe() const override {
    return "repeat(" + (count_ < 0 ? std::string("forever") : std::to_string(count_)) + ")";
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    auto it = std::make_unique<RepeatIterator>(ctx, *this, params, count_);
    SLUICE_RETURN_IF_ERROR(it->Start(0));
    return std::unique_ptr<IteratorNode>(std::move(it));
  }

 private:
  int64_t count_;
};

}  // namespace

Dataset MakeRepeat(const Dataset& input, int64_t count) {
  return Dataset(std::make_shared<RepeatNode>(input, count < 0 ? -1 : count));
}

}  // namespace sluice::pipeline_internal
