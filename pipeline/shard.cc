// shard(num_shards, index, options): element `index` of every round of
// num_shards consecutive input elements. Round k starts at input position
// k * num_shards; with options.equal only complete rounds count, and with
// options.pad the last round is filled with weighted-zero copies of its first
// element (ShardOptions says exactly).
//
// Reading: over a positional input with a known cardinality the iterator
// seeks to its elements and reads nothing else; otherwise it reads the input
// in order and skips the other shards' elements (and, with equal and an
// unknown cardinality, reads each round to its end before returning its
// element). Over a random-access input the node is random access itself.
//
// Every element leaves with its input position as its key (Element::key), so
// maps draw the same random numbers for it whatever the number of shards.
//
// State: the mapping from this shard's positions to rounds (round start of
// position j = base + (j - j0) * num_shards), the position, the input
// elements read, and the input. A state saved with another num_shards or
// index (a job restored on another number of ranks) continues from the same
// round: the lowest position sought or read after restore keeps the round
// the saved shard mapped it to, and later positions follow on the
// new number of shards. Over an input read in order that needs a save at a
// round boundary (equal); otherwise restore is InvalidArgument.
#include <algorithm>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

// Elements of a shard of n (>= 0) input elements.
int64_t ShardCardinality(int64_t n, int64_t num, int64_t index, const ShardOptions& o) {
  if (n < 0) return n;
  if (o.pad) return (n + num - 1) / num;
  if (o.equal) return n / num;
  return n / num + (index < n % num ? 1 : 0);
}

Status WeightClash(const ShardOptions& o) {
  return Status::InvalidArgument("shard: the input already has a component named '" +
                                 o.weight_name + "'; choose another weight_name");
}

ElementSpec ShardSpec(const ElementSpec& in, const ShardOptions& o) {
  if (!o.pad || !in.known()) return in;
  std::vector<ComponentSpec> c = in.components();
  c.push_back({o.weight_name, DType::kFloat32, Shape{}});
  return ElementSpec(std::move(c));
}

// The output element: the key set (unless an earlier split set it) and, when
// padding, the weight appended.
Result<Element> Finish(Element e, int64_t key, const ShardOptions& o, float weight) {
  if (e.key() < 0) e.set_key(key);
  if (o.pad) {
    if (e.find(o.weight_name) != nullptr) return WeightClash(o);
    e.push_back(Tensor::Scalar<float>(weight), o.weight_name);
  }
  return e;
}

class ShardNode;

class ShardIterator : public IteratorNode {
 public:
  ShardIterator(IteratorContext& ctx, const ShardNode& node, std::unique_ptr<IteratorNode> input);

  Status Save(StateWriter& w) override {
    if (remapped_ && !anchored_) Anchor(produced_);
    w.Tag("shard");
    w.I64(num_);
    w.I64(index_);
    w.I64(base_);
    w.I64(j0_);
    w.I64(produced_);
    w.I64(consumed_);
    return input_->Save(w);
  }
  Status Restore(StateReader& r) override;
  bool positional() const override { return Seekable(); }
  int64_t position() const override { return produced_; }
  Status SeekTo(int64_t n) override {
    if (n < 0) return Status::OutOfRange("shard: negative position " + std::to_string(n));
    if (remapped_ && (!anchored_ || n < j0_)) Anchor(n);
    produced_ = n;
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    if (remapped_ && !anchored_) Anchor(produced_);
    return Seekable() ? NextSeeking() : NextInOrder();
  }

 private:
  bool Seekable() const { return n_ >= 0 && input_->positional(); }
  int64_t RoundStart(int64_t j) const { return base_ + (j - j0_) * num_; }
  // After a restore from another shard count: position j continues from the
  // round the saved shard mapped it to. Stages above rewind to the position
  // their consumer reached after inner ones (which read ahead) have sought or
  // read further: the lowest position asked for wins, and what was read past
  // it is discarded by the stage that rewound.
  void Anchor(int64_t j) {
    base_ = saved_base_ + (j - saved_j0_) * saved_num_;
    j0_ = j;
    anchored_ = true;
  }
  NextResult NextSeeking();
  NextResult NextInOrder();
  // Reads input element `pos` (REQUIRES: Seekable()).
  NextResult ReadAt(int64_t pos) {
    if (input_->position() != pos) SLUICE_RETURN_IF_ERROR(input_->SeekTo(pos));
    return input_->Next();
  }

  std::unique_ptr<IteratorNode> input_;
  const int64_t num_, index_, n_;
  const ShardOptions& o_;
  int64_t base_ = 0, j0_ = 0;  // the mapping from positions to rounds
  int64_t produced_ = 0;       // this shard's position
  int64_t consumed_ = 0;       // input elements read (in-order reading)
  // The first element of the current round, kept for padding (in order).
  std::optional<Element> round_first_;
  int64_t round_first_at_ = -1;
  // Restored from a state of another shard count: its mapping, and whether
  // ours has been anchored to it yet.
  bool remapped_ = false, anchored_ = false;
  int64_t saved_base_ = 0, saved_j0_ = 0, saved_num_ = 1;
};

class ShardNode : public DatasetNode {
 public:
  ShardNode(const Dataset& input, int64_t num, int64_t index, ShardOptions o)
      : DatasetNode("shard", "", {input.node()}, ShardSpec(input.element_spec(), o),
                    ShardCardinality(input.cardinality(), num, index, o)),
        num_(num),
        index_(index),
        options_(std::move(o)) {}
  std::string Describe() const override {
    std::string d = "shard(" + std::to_string(num_) + ", " + std::to_string(index_);
    if (options_.pad) {
      d += ", pad";
    } else if (options_.equal) {
      d += ", equal";
    }
    return d + ")";
  }
  bool random_access() const override {
    return inputs()[0]->random_access() && inputs()[0]->cardinality() >= 0;
  }
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    const int64_t n = inputs()[0]->cardinality();
    const int64_t g = i * num_ + index_;
    if (g < n) {
      SLUICE_ASSIGN_OR_RETURN(Element e, inputs()[0]->Get(ctx, g));
      return Finish(std::move(e), g, options_, 1.0f);
    }
    if (!options_.pad || i * num_ >= n) {
      return Status::OutOfRange("shard: element " + std::to_string(i) + " of " +
                                std::to_string(cardinality()));
    }
    SLUICE_ASSIGN_OR_RETURN(Element e, inputs()[0]->Get(ctx, i * num_));
    return Finish(std::move(e), i * num_, options_, 0.0f);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(
        std::make_unique<ShardIterator>(ctx, *this, std::move(input)));
  }

  int64_t num() const { return num_; }
  int64_t index() const { return index_; }
  const ShardOptions& shard_options() const { return options_; }

 private:
  int64_t num_, index_;
  ShardOptions options_;
};

ShardIterator::ShardIterator(IteratorContext& ctx, const ShardNode& node,
                             std::unique_ptr<IteratorNode> input)
    : IteratorNode(&ctx, ctx.CountersFor(&node)),
      input_(std::move(input)),
      num_(node.num()),
      index_(node.index()),
      n_(node.inputs()[0]->cardinality()),
      o_(node.shard_options()) {}

Status ShardIterator::Restore(StateReader& r) {
  SLUICE_RETURN_IF_ERROR(r.Tag("shard"));
  SLUICE_ASSIGN_OR_RETURN(int64_t num, r.I64());
  SLUICE_ASSIGN_OR_RETURN(int64_t index, r.I64());
  SLUICE_ASSIGN_OR_RETURN(int64_t base, r.I64());
  SLUICE_ASSIGN_OR_RETURN(int64_t j0, r.I64());
  SLUICE_ASSIGN_OR_RETURN(int64_t produced, r.I64());
  SLUICE_ASSIGN_OR_RETURN(int64_t consumed, r.I64());
  if (num < 1 || index < 0 || index >= num || base < 0 || j0 < 0 || produced < 0 || consumed < 0) {
    return Status::DataLoss("iterator state: bad shard fields");
  }
  SLUICE_RETURN_IF_ERROR(input_->Restore(r));
  produced_ = produced;
  consumed_ = consumed;
  if (num == num_ && index == index_) {
    base_ = base;
    j0_ = j0;
    return Status::OK();
  }
  // Saved as shard `index` of `num`: continue from the same round.
  const int64_t round = base + (produced - j0) * num;
  if (!Seekable() && consumed != round) {
    return Status::InvalidArgument(
        "iterator state: saved by shard " + std::to_string(index) + " of " + std::to_string(num) +
        " in the middle of a round, over an input read in order; it restores as shard " +
        std::to_string(index_) + " of " + std::to_string(num_) +
        " only if saved at a round boundary (shard with equal=true, or the same shard count)");
  }
  saved_base_ = base;
  saved_j0_ = j0;
  saved_num_ = num;
  remapped_ = true;
  anchored_ = false;
  return Status::OK();
}

NextResult ShardIterator::NextSeeking() {
  const int64_t start = RoundStart(produced_);
  const int64_t mine = start + index_;
  const bool complete = start + num_ <= n_;
  if (start >= n_ || (o_.equal && !o_.pad && !complete) || (!o_.pad && mine >= n_)) {
    return std::optional<Element>();
  }
  ++produced_;       // an error stands for its element: the next call moves on
  if (mine >= n_) {  // padding: the last round's first element, weighted 0
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, ReadAt(start));
    if (!e) return Status::Internal("shard: the input ended before its cardinality");
    SLUICE_ASSIGN_OR_RETURN(Element out, Finish(std::move(*e), start, o_, 0.0f));
    return std::optional<Element>(std::move(out));
  }
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, ReadAt(mine));
  if (!e) return e;
  SLUICE_ASSIGN_OR_RETURN(Element out, Finish(std::move(*e), mine, o_, 1.0f));
  return std::optional<Element>(std::move(out));
}

NextResult ShardIterator::NextInOrder() {
  const int64_t start = RoundStart(produced_);
  const int64_t mine = start + index_;
  // Reads the next input element; an error counts as the element it stands
  // for (so shards stay aligned) and is returned only if it is ours.
  NextResult ours = std::optional<Element>();
  bool have_ours = false;
  while (consumed_ <= mine) {
    if (ctx()->cancelled()) return Status::Cancelled("shard: cancelled");
    NextResult e = input_->Next();
    if (e.ok() && !e->has_value()) break;  // the input ended
    if (consumed_ == start && o_.pad && e.ok()) round_first_ = **e, round_first_at_ = start;
    if (consumed_ == mine) ours = std::move(e), have_ours = true;
    ++consumed_;
  }
  if (o_.equal && !o_.pad && have_ours) {
    // Ours counts only if its round is complete: read to the round's end.
    while (consumed_ < start + num_) {
      if (ctx()->cancelled()) return Status::Cancelled("shard: cancelled");
      NextResult e = input_->Next();
      if (e.ok() && !e->has_value()) return std::optional<Element>();  // dropped
      ++consumed_;
    }
  }
  if (!have_ours) {
    // The input ended before our element: pad if the round began.
    if (!o_.pad || consumed_ <= start || round_first_at_ != start) {
      return std::optional<Element>();
    }
    ++produced_;
    SLUICE_ASSIGN_OR_RETURN(Element out, Finish(*round_first_, start, o_, 0.0f));
    return std::optional<Element>(std::move(out));
  }
  ++produced_;
  if (!ours.ok()) return ours;
  SLUICE_ASSIGN_OR_RETURN(Element out, Finish(std::move(**ours), mine, o_, 1.0f));
  return std::optional<Element>(std::move(out));
}

}  // namespace

Dataset MakeShard(const Dataset& input, int64_t num_shards, int64_t index, ShardOptions options) {
  if (num_shards < 1) {
    return Dataset::FromError(Status::InvalidArgument("shard: num_shards must be at least 1, got " +
                                                      std::to_string(num_shards)));
  }
  if (index < 0 || index >= num_shards) {
    return Dataset::FromError(Status::InvalidArgument("shard: index must be in [0, " +
                                                      std::to_string(num_shards) + "), got " +
                                                      std::to_string(index)));
  }
  if (options.pad && options.weight_name.empty()) {
    return Dataset::FromError(
        Status::InvalidArgument("shard: pad needs a weight_name for the weight component"));
  }
  if (options.pad && input.element_spec().known() && input.element_spec().components().size() > 0) {
    for (const ComponentSpec& c : input.element_spec().components()) {
      if (c.name == options.weight_name) return Dataset::FromError(WeightClash(options));
    }
  }
  options.equal = options.equal || options.pad;
  return Dataset(std::make_shared<ShardNode>(input, num_shards, index, std::move(options)));
}

}  // namespace sluice::pipeline_internal
