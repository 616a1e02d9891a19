// Dataset::random and Dataset::counter: infinite sources whose element i is
// a pure function of i (and, for random, of the seed and epoch), so both are
// positional (SeekTo is O(1)) and allow random access.
//
// random: element i is Rng(seed', i).NextU32() as an int64, the first word
// of the Philox4x32-10 block at counter 0 of stream i (core/rng.h), where
// seed' is the stage's seed, mixed with the iteration number when
// rerandomize_each_iteration. Values are in [0, 2^32), as tf.data's (which
// draws one 32-bit Philox word per element, from another stream layout).
#include "sluice/core/rng.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

// The iterator of an infinite positional source: a cursor, and the seed the
// elements are drawn from (saved, so a restored iterator of a pipeline
// without a fixed seed continues the same sequence).
class CursorIterator : public IteratorNode {
 public:
  using ElementAt = Element (*)(const DatasetNode& node, uint64_t seed, int64_t i);
  CursorIterator(IteratorContext& ctx, const DatasetNode& node, uint64_t seed, ElementAt at)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), seed_(seed), at_(at) {}

  Status Save(StateWriter& w) override {
    w.Tag(node_.kind());
    w.U64(seed_);
    w.I64(next_);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag(node_.kind()));
    SLUICE_ASSIGN_OR_RETURN(seed_, r.U64());
    SLUICE_ASSIGN_OR_RETURN(int64_t next, r.I64());
    return SeekTo(next);
  }
  bool positional() const override { return true; }
  int64_t position() const override { return next_; }
  Status SeekTo(int64_t n) override {
    if (n < 0) return Status::OutOfRange(node_.name() + ": negative position " + std::to_string(n));
    next_ = n;
    return Status::OK();
  }

 protected:
  NextResult GetNext() override { return std::optional<Element>(at_(node_, seed_, next_++)); }

 private:
  const DatasetNode& node_;
  uint64_t seed_;
  const ElementAt at_;
  int64_t next_ = 0;
};

class RandomNode : public DatasetNode {
 public:
  explicit RandomNode(RandomOptions o)
      : DatasetNode("random", o.name, {}, ElementSpec({{"", DType::kInt64, Shape{}}}),
                    kInfiniteCardinality),
        o_(std::move(o)) {}
  static Element At(const DatasetNode&, uint64_t seed, int64_t i) {
    return Element({Tensor::Scalar<int64_t>(Rng(seed, static_cast<uint64_t>(i)).NextU32())});
  }
  bool random_access() const override { return true; }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    return At(*this, ctx.StageSeed(this, o_.seed), i);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    uint64_t seed = ctx.StageSeed(this, o_.seed);
    if (o_.rerandomize_each_iteration) seed = MixSeed(seed, params.iteration);
    return std::unique_ptr<IteratorNode>(std::make_unique<CursorIterator>(ctx, *this, seed, &At));
  }

 private:
  RandomOptions o_;
};

class CounterNode : public DatasetNode {
 public:
  CounterNode(int64_t start, int64_t step, DType dtype)
      : DatasetNode("counter", "", {}, ElementSpec({{"", dtype, Shape{}}}), kInfiniteCardinality),
        start_(start),
        step_(step),
        dtype_(dtype) {}
  std::string Describe() const override {
    return "counter(" + std::to_string(start_) + ", " + std::to_string(step_) + ")";
  }
  static Element At(const DatasetNode& node, uint64_t, int64_t i) {
    const auto& self = static_cast<const CounterNode&>(node);
    // Wraps around as int64 arithmetic in tf.data does.
    const int64_t v =
        static_cast<int64_t>(static_cast<uint64_t>(self.start_) +
                             static_cast<uint64_t>(i) * static_cast<uint64_t>(self.step_));
    switch (self.dtype_) {
      case DType::kInt32: return Element({Tensor::Scalar<int32_t>(static_cast<int32_t>(v))});
      case DType::kFloat32: return Element({Tensor::Scalar<float>(static_cast<float>(v))});
      case DType::kFloat64: return Element({Tensor::Scalar<double>(static_cast<double>(v))});
      default: return Element({Tensor::Scalar<int64_t>(v)});
    }
  }
  bool random_access() const override { return true; }
  Result<Element> Get(IteratorContext&, int64_t i) const override { return At(*this, 0, i); }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams&) const override {
    return std::unique_ptr<IteratorNode>(std::make_unique<CursorIterator>(ctx, *this, 0, &At));
  }

 private:
  int64_t start_, step_;
  DType dtype_;
};

}  // namespace

Dataset MakeRandom(RandomOptions options) {
  return Dataset(std::make_shared<RandomNode>(std::move(options)));
}

Dataset MakeCounter(int64_t start, int64_t step, DType dtype) {
  if (dtype != DType::kInt64 && dtype != DType::kInt32 && dtype != DType::kFloat32 &&
      dtype != DType::kFloat64) {
    return Dataset::FromError(
        Status::InvalidArgument("counter: dtype must be int32, int64, float32 or float64, got " +
                                std::string(DTypeName(dtype))));
  }
  return Dataset(std::make_shared<CounterNode>(start, step, dtype));
}

}  // namespace sluice::pipeline_internal
