// take and skip.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class TakeSkipIterator : public IteratorNode {
 public:
  TakeSkipIterator(IteratorContext& ctx, const DatasetNode& node,
                   std::unique_ptr<IteratorNode> input, bool take, int64_t count)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        input_(std::move(input)),
        take_(take),
        count_(count) {}

  Status Save(StateWriter& w) override {
    w.Tag(take_ ? "take" : "skip");
    w.I64(seen_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag(take_ ? "take" : "skip"));
    SLUICE_ASSIGN_OR_RETURN(seen_, r.I64());
    return input_->Restore(r);
  }
  bool positional() const override { return input_->positional(); }
  int64_t position() const override {
    return take_ ? seen_ : std::max<int64_t>(0, input_->position() - count_);
  }
  Status SeekTo(int64_t n) override {
    if (take_) {
      seen_ = n;
      return input_->SeekTo(n);
    }
    seen_ = count_;
    return input_->SeekTo(n + count_);
  }

 protected:
  NextResult GetNext() override {
    if (take_) {
      if (count_ >= 0 && seen_ >= count_) return std::optional<Element>();
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (e) ++seen_;
      return e;
    }
    while (count_ < 0 || seen_ < count_) {
      if (input_->positional() && count_ >= 0) {
        SLUICE_RETURN_IF_ERROR(input_->SeekTo(input_->position() + (count_ - seen_)));
        seen_ = count_;
        break;
      }
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) return e;
      ++seen_;
    }
    return input_->Next();
  }

 private:
  std::unique_ptr<IteratorNode> input_;
  const bool take_;
  const int64_t count_;
  int64_t seen_ = 0;
};

int64_t TakeCardinality(int64_t n, int64_t count) {
  if (count < 0) return n;
  if (n == kInfiniteCardinality) return count;
  if (n < 0) return n;
  return std::min(n, count);
}

int64_t SkipCardinality(int64_t n, int64_t count) {
  if (n == kInfiniteCardinality) return n;
  if (count < 0) return n == kUnknownCardinality ? n : 0;
  if (n < 0) return n;
  return std::max<int64_t>(0, n - count);
}

class TakeSkipNode : public DatasetNode {
 public:
  TakeSkipNode(const Dataset& input, bool take, int64_t count)
      : DatasetNode(take ? "take" : "skip", "", {input.node()}, input.element_spec(),
                    take ? TakeCardinality(input.cardinality(), count)
                         : SkipCardinality(input.cardinality(), count)),
        take_(take),
        count_(count) {}
  std::string Describe() const override { return kind() + "(" + std::to_string(count_) + ")"; }
  bool random_access() const override { return inputs()[0]->random_access() && cardinality() >= 0; }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    return inputs()[0]->Get(ctx, take_ ? i : i + count_);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<TakeSkipIterator>(ctx, *this, std::move(input), take_, count_));
  }

 private:
  bool take_;
  int64_t count_;
};

}  // namespace

Dataset MakeTake(const Dataset& input, int64_t count) {
  return Dataset(std::make_shared<TakeSkipNode>(input, true, count < 0 ? -1 : count));
}
Dataset MakeSkip(const Dataset& input, int64_t count) {
  return Dataset(std::make_shared<TakeSkipNode>(input, false, count < 0 ? -1 : count));
}

}  // namespace sluice::pipeline_internal
