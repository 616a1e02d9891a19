// global_shuffle: element i is input.Get(perm(i)) for a pseudo-random
// permutation perm of [0, n) (IndexPermutation, core/index_permutation.h), so
// the whole dataset is shuffled uniformly while no element is buffered. The input must
// allow random access and have a known cardinality.
//
// The permutation's seed is the stage seed (options.seed, else derived from
// the pipeline seed), mixed with the iteration number when
// reshuffle_each_iteration is set. The iterator's state is its cursor and
// that seed: a few dozen bytes whatever the dataset's size.
#include "sluice/core/index_permutation.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class GlobalShuffleIterator : public IteratorNode {
 public:
  GlobalShuffleIterator(IteratorContext& ctx, const DatasetNode& node, uint64_t seed)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        n_(node.cardinality()),
        seed_(seed),
        perm_(static_cast<uint64_t>(n_), seed) {}

  Status Save(StateWriter& w) override {
    w.Tag("global_shuffle");
    w.I64(next_);
    w.U64(seed_);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("global_shuffle"));
    SLUICE_ASSIGN_OR_RETURN(int64_t next, r.I64());
    SLUICE_ASSIGN_OR_RETURN(uint64_t seed, r.U64());
    if (seed != seed_) {
      seed_ = seed;
      perm_ = IndexPermutation(static_cast<uint64_t>(n_), seed);
    }
    return SeekTo(next);
  }
  bool positional() const override { return true; }
  int64_t position() const override { return next_; }
  Status SeekTo(int64_t n) override {
    if (n < 0 || n > n_) {
      return Status::OutOfRange(node_.name() + ": position " + std::to_string(n) + " outside [0, " +
                                std::to_string(n_) + "]");
    }
    next_ = n;
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    if (next_ >= n_) return std::optional<Element>();
    const int64_t j = static_cast<int64_t>(perm_(static_cast<uint64_t>(next_++)));
    // A failed element is passed like any other: the next call moves on.
    SLUICE_ASSIGN_OR_RETURN(Element e, node_.inputs()[0]->Get(*ctx(), j));
    return std::optional<Element>(std::move(e));
  }

 private:
  const DatasetNode& node_;
  const int64_t n_;
  uint64_t seed_;
  IndexPermutation perm_;
  int64_t next_ = 0;
};

class GlobalShuffleNode : public DatasetNode {
 public:
  GlobalShuffleNode(const Dataset& input, GlobalShuffleOptions o)
      : DatasetNode("global_shuffle", o.name, {input.node()}, input.element_spec(),
                    input.cardinality()),
        options_(std::move(o)) {}
  std::string Describe() const override {
    std::string d = name();
    if (options_.seed) d += "(seed=" + std::to_string(*options_.seed) + ")";
    return d;
  }
  bool random_access() const override { return true; }
  // Element i of the permutation of iteration 0.
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    IndexPermutation perm(static_cast<uint64_t>(cardinality()), SeedFor(ctx, 0));
    return inputs()[0]->Get(ctx, static_cast<int64_t>(perm(static_cast<uint64_t>(i))));
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    return std::unique_ptr<IteratorNode>(
        std::make_unique<GlobalShuffleIterator>(ctx, *this, SeedFor(ctx, params.iteration)));
  }

 private:
  uint64_t SeedFor(IteratorContext& ctx, uint64_t iteration) const {
    const uint64_t seed = ctx.StageSeed(this, options_.seed);
    return options_.reshuffle_each_iteration ? MixSeed(seed, iteration) : seed;
  }

  GlobalShuffleOptions options_;
};

}  // namespace

Dataset MakeGlobalShuffle(const Dataset& input, GlobalShuffleOptions options) {
  const auto& in = input.node();
  if (!in->random_access()) {
    return Dataset::FromError(Status::FailedPrecondition(
        "global_shuffle: its input '" + in->name() +
        "' does not allow random access (use sources such as range, from_tensor_slices or "
        "indexed TFRecord files, and maps, take, skip and shard over them; or shuffle())"));
  }
  if (in->cardinality() < 0) {
    return Dataset::FromError(Status::FailedPrecondition(
        "global_shuffle: its input '" + in->name() + "' has " +
        (in->cardinality() == kInfiniteCardinality ? "infinite" : "unknown") +
        " cardinality; a global shuffle needs a known number of elements"));
  }
  return Dataset(std::make_shared<GlobalShuffleNode>(input, std::move(options)));
}

}  // namespace sluice::pipeline_internal
