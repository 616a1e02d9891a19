// assert_cardinality (tf.data.experimental.assert_cardinality): the input's
// elements unchanged, with a declared cardinality that reading checks.
#include <string>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

std::string CountText(int64_t n) {
  return n == kInfiniteCardinality ? "an infinite number of"
                                   : std::to_string(n) + (n == 1 ? " element" : " elements");
}

Status Mismatch(int64_t expected, const std::string& got) {
  return Status::FailedPrecondition(
      "assert_cardinality: the input was expected to contain " + CountText(expected) +
      (expected == kInfiniteCardinality ? " elements" : "") + " but contained " + got);
}

class AssertCardinalityIterator : public IteratorNode {
 public:
  AssertCardinalityIterator(IteratorContext& ctx, const DatasetNode& node,
                            std::unique_ptr<IteratorNode> input, int64_t expected)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), input_(std::move(input)), expected_(expected) {}

  Status Save(StateWriter& w) override {
    w.Tag("assert_cardinality");
    w.I64(seen_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("assert_cardinality"));
    SLUICE_ASSIGN_OR_RETURN(seen_, r.I64());
    return input_->Restore(r);
  }
  bool positional() const override { return input_->positional(); }
  int64_t position() const override { return input_->position(); }
  Status SeekTo(int64_t n) override {
    seen_ = n;
    return input_->SeekTo(n);
  }

 protected:
  NextResult GetNext() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
    if (!e) {
      if (expected_ != kInfiniteCardinality && seen_ == expected_) return e;
      return Mismatch(expected_, "only " + CountText(seen_));
    }
    ++seen_;
    if (expected_ != kInfiniteCardinality && seen_ > expected_) {
      return Mismatch(expected_, "at least " + CountText(seen_));
    }
    return e;
  }

 private:
  std::unique_ptr<IteratorNode> input_;
  const int64_t expected_;
  int64_t seen_ = 0;
};

class AssertCardinalityNode : public DatasetNode {
 public:
  AssertCardinalityNode(const Dataset& input, int64_t expected)
      : DatasetNode("assert_cardinality", "", {input.node()}, input.element_spec(), expected),
        expected_(expected) {}
  std::string Describe() const override {
    return kind() + "(" +
           (expected_ == kInfiniteCardinality ? std::string("inf") : std::to_string(expected_)) +
           ")";
  }
  bool random_access() const override { return inputs()[0]->random_access(); }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    return inputs()[0]->Get(ctx, i);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<AssertCardinalityIterator>(ctx, *this, std::move(input), expected_));
  }

 private:
  int64_t expected_;
};

}  // namespace

Dataset MakeAssertCardinality(const Dataset& input, int64_t expected) {
  if (expected < 0 && expected != kInfiniteCardinality) {
    return Dataset::FromError(
        Status::InvalidArgument("assert_cardinality: expected_cardinality must be a count >= 0 or "
                                "kInfiniteCardinality, not " +
                                std::to_string(expected)));
  }
  const int64_t known = input.cardinality();
  if (known != kUnknownCardinality && known != expected) {
    return Dataset::FromError(Mismatch(expected, CountText(known) + " (known when built)"));
  }
  return Dataset(std::make_shared<AssertCardinalityNode>(input, expected));
}

}  // namespace sluice::pipeline_internal
