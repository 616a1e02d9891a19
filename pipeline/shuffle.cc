// shuffle: a buffer of buffer_size elements from which each output is drawn
// uniformly at random and replaced by the next input element (tf.data's
// shuffle). The buffer's bytes are charged to the RAM budget as the
// consumer's path holds them (read-ahead below then leaves them room); a
// buffer that alone would exceed the budget is ResourceExhausted. Small
// elements wait packed (internal/packed_element.h).
#include <deque>

#include "sluice/core/rng.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/packed_element.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

class ShuffleIterator : public IteratorNode {
 public:
  ShuffleIterator(IteratorContext& ctx, const DatasetNode& node,
                  std::unique_ptr<IteratorNode> input, int64_t buffer_size, uint64_t seed)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        input_(std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed) {
    counters()->buffer_capacity.store(buffer_size_, std::memory_order_relaxed);
  }
  ~ShuffleIterator() override { Clear(); }

  Status Save(StateWriter& w) override {
    w.Tag("shuffle");
    w.U64(seed_);
    w.U64(draws_);
    w.Bool(input_ended_);
    w.U64(buffer_.size());
    for (const PackedElement& e : buffer_) SLUICE_RETURN_IF_ERROR(w.Elem(e.Peek()));
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag("shuffle"));
    Clear();
    SLUICE_ASSIGN_OR_RETURN(seed_, r.U64());
    SLUICE_ASSIGN_OR_RETURN(draws_, r.U64());
    SLUICE_ASSIGN_OR_RETURN(input_ended_, r.Bool());
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    if (n > static_cast<uint64_t>(buffer_size_)) {
      return Status::DataLoss("iterator state: stage '" + node_.name() + "' holds " +
                              std::to_string(n) + " elements, more than its buffer_size " +
                              std::to_string(buffer_size_));
    }
    for (uint64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
      const int64_t b = ElementBytes(e);
      if (bytes_ + b > ctx()->memory().limit()) {
        return Status::ResourceExhausted(
            "restoring stage '" + node_.name() + "': " + std::to_string(i + 1) +
            " buffered elements exceed the ram_budget of " + ByteSize(ctx()->memory().limit()));
      }
      ctx()->memory().ChargeRequired(b);
      Add(std::move(e), b);
    }
    return input_->Restore(r);
  }

 protected:
  NextResult GetNext() override {
    while (!input_ended_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->Next());
      if (!e) {
        input_ended_ = true;
        break;
      }
      const int64_t b = ElementBytes(*e);
      if (bytes_ + b > ctx()->memory().limit()) {
        return Status::ResourceExhausted(
            "stage '" + node_.name() + "' (buffer_size " + std::to_string(buffer_size_) +
            "): holding " + std::to_string(buffer_.size()) + " elements of " + ByteSize(bytes_) +
            ", the next element (" + ByteSize(b) + ") would exceed the RAM budget of " +
            ByteSize(ctx()->memory().limit()) +
            "; use a smaller buffer_size or raise Options::ram_budget");
      }
      ctx()->memory().ChargeRequired(b);
      Add(std::move(*e), b);
      SLUICE_RETURN_IF_ERROR(ctx()->memory().CheckRequired(node_.name()));
    }
    if (buffer_.empty()) return std::optional<Element>();
    Rng rng(seed_, draws_++);
    const size_t i = static_cast<size_t>(rng.UniformInt(buffer_.size()));
    Element out = std::move(buffer_[i]).Unpack();
    if (i + 1 != buffer_.size()) buffer_[i] = std::move(buffer_.back());
    buffer_.pop_back();
    const int64_t b = ElementBytes(out);
    bytes_ -= b;
    ctx()->memory().ReleaseRequired(b);
    counters()->buffered_bytes.fetch_sub(b, std::memory_order_relaxed);
    counters()->buffer_depth.store(static_cast<int64_t>(buffer_.size()), std::memory_order_relaxed);
    return std::optional<Element>(std::move(out));
  }

 private:
  void Add(Element e, int64_t b) {
    buffer_.push_back(packer_.Pack(std::move(e)));
    bytes_ += b;
    counters()->buffered_bytes.fetch_add(b, std::memory_order_relaxed);
    counters()->buffer_depth.store(static_cast<int64_t>(buffer_.size()), std::memory_order_relaxed);
  }
  void Clear() {
    ctx()->memory().ReleaseRequired(bytes_);
    counters()->buffered_bytes.fetch_sub(bytes_, std::memory_order_relaxed);
    counters()->buffer_depth.store(0, std::memory_order_relaxed);
    bytes_ = 0;
    buffer_.clear();
  }

  const DatasetNode& node_;
  std::unique_ptr<IteratorNode> input_;
  const int64_t buffer_size_;
  uint64_t seed_;
  uint64_t draws_ = 0;  // draw k uses the stream Rng(seed_, k)
  bool input_ended_ = false;
  // A deque: no doubling of a vector's capacity (up to 2x the slots).
  std::deque<PackedElement> buffer_;  // small elements packed: ~1.1x payload
  ElementPacker packer_;
  int64_t bytes_ = 0;  // charged to the RAM budget
};

class ShuffleNode : public DatasetNode {
 public:
  ShuffleNode(const Dataset& input, int64_t buffer_size, ShuffleOptions o)
      : DatasetNode("shuffle", o.name, {input.node()}, input.element_spec(), input.cardinality()),
        buffer_size_(buffer_size),
        o_(std::move(o)) {}
  std::string Describe() const override {
    return name() + "(" + std::to_string(buffer_size_) + ")";
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    uint64_t seed = ctx.StageSeed(this, o_.seed);
    if (o_.reshuffle_each_iteration) seed = MixSeed(seed, params.iteration);
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<ShuffleIterator>(ctx, *this, std::move(input), buffer_size_, seed));
  }

 private:
  int64_t buffer_size_;
  ShuffleOptions o_;
};

}  // namespace

Dataset MakeShuffle(const Dataset& input, int64_t buffer_size, ShuffleOptions options) {
  if (buffer_size < 1) {
    return Dataset::FromError(Status::InvalidArgument("shuffle: buffer_size must be >= 1, got " +
                                                      std::to_string(buffer_size)));
  }
  return Dataset(std::make_shared<ShuffleNode>(input, buffer_size, std::move(options)));
}

}  // namespace sluice::pipeline_internal
