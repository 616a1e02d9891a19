// shard(num_shards, index): elements index, index + num_shards, ... of the
// input. Over a random-access input with a known cardinality the node is
// random access itself and its iterator reads only its own elements
// (Get(i) = input.Get(i * num_shards + index)). Otherwise the input is read
// in order and the others are skipped, by SeekTo when the input is
// positional with a known cardinality.
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/indexed_iterator.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class ShardIterator : public IteratorNode {
 public:
  ShardIterator(IteratorContext& ctx, const DatasetNode& node, std::unique_ptr<IteratorNode> input,
                int64_t num_shards, int64_t index, int64_t input_cardinality)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        input_(std::move(input)),
        num_(num_shards),
        index_(index),
        input_card_(input_cardinality) {}

  Status Save(StateWriter& w) override {
    w.Tag("shard");
    w.I64(consumed_);
    w.I64(produced_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("shard"));
    SLUICE_ASSIGN_OR_RETURN(consumed_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(produced_, r.I64());
    if (consumed_ < 0 || produced_ < 0)
      return Status::DataLoss("iterator state: negative shard count");
    return input_->Restore(r);
  }
  bool positional() const override { return Seekable(); }
  int64_t position() const override { return produced_; }
  Status SeekTo(int64_t n) override {
    produced_ = n;
    consumed_ = std::min(n * num_ + index_, input_card_);
    return input_->SeekTo(consumed_);
  }

 protected:
  NextResult GetNext() override {
    // The input position of our next element.
    const int64_t target = produced_ * num_ + index_;
    if (Seekable()) {
      if (target >= input_card_) {
        consumed_ = input_card_;
        return std::optional<Element>();
      }
      if (input_->position() != target) SLUICE_RETURN_IF_ERROR(input_->SeekTo(target));
      consumed_ = target;
    } else {
      while (consumed_ < target) {
        if (ctx()->cancelled()) return Status::Cancelled("shard: cancelled");
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
        if (!e) return e;
        ++consumed_;
      }
    }
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
    if (!e) return e;
    ++consumed_;
    ++produced_;
    return e;
  }

 private:
  bool Seekable() const { return input_card_ >= 0 && input_->positional(); }

  std::unique_ptr<IteratorNode> input_;
  const int64_t num_, index_, input_card_;
  int64_t consumed_ = 0;  // input elements read (or sought past)
  int64_t produced_ = 0;
};

int64_t ShardCardinality(int64_t n, int64_t num, int64_t index) {
  if (n < 0) return n;
  return n / num + (index < n % num ? 1 : 0);
}

class ShardNode : public DatasetNode {
 public:
  ShardNode(const Dataset& input, int64_t num, int64_t index)
      : DatasetNode("shard", "", {input.node()}, input.element_spec(),
                    ShardCardinality(input.cardinality(), num, index)),
        num_(num),
        index_(index) {}
  std::string Describe() const override {
    return "shard(" + std::to_string(num_) + ", " + std::to_string(index_) + ")";
  }
  bool random_access() const override {
    return inputs()[0]->random_access() && inputs()[0]->cardinality() >= 0;
  }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    return inputs()[0]->Get(ctx, i * num_ + index_);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    if (random_access()) {
      return std::unique_ptr<IteratorNode>(std::make_unique<IndexedIterator>(ctx, *this));
    }
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(std::make_unique<ShardIterator>(
        ctx, *this, std::move(input), num_, index_, inputs()[0]->cardinality()));
  }

 private:
  int64_t num_, index_;
};

}  // namespace

Dataset MakeShard(const Dataset& input, int64_t num_shards, int64_t index) {
  if (num_shards < 1) {
    return Dataset::FromError(Status::InvalidArgument("shard: num_shards must be at least 1, got " +
                                                      std::to_string(num_shards)));
  }
  if (index < 0 || index >= num_shards) {
    return Dataset::FromError(Status::InvalidArgument("shard: index must be in [0, " +
                                                      std::to_string(num_shards) + "), got " +
                                                      std::to_string(index)));
  }
  return Dataset(std::make_shared<ShardNode>(input, num_shards, index));
}

}  // namespace sluice::pipeline_internal
