// rejection_resample: tf.data's Dataset.rejection_resample. (class, element)
// pairs whose classes follow target_dist, made as tf.data makes them: a
// mixture of two passes over the input, the input as it is (chosen with
// probability m) and the input filtered by rejection (chosen otherwise),
// ending when the chosen pass ends (sample_from_datasets with
// stop_on_empty_dataset). With p the input's class distribution and
// r_i = t_i / (p_i + FLT_MIN):
//   m = min_i r_i,  a_i = (r_i - m) / (max_i r_i - m)  (accept class i),
// which gives t_i overall: m p_i + (1 - m) (t_i - m p_i) / (1 - m) = t_i.
// p is initial_dist, or estimated as tf.data does from counts that start at
// 10 per class (its smoothing constant) plus the classes of the input's
// prefix read so far by either pass (each position counted once: both
// passes read the same input in the same order). tf.data counts per block
// of 32 classes, from a third pass, at the element's own index. Draw k of the mixture
// uses Rng(seed_mix, k), the acceptance test of the filtered pass's j-th
// element Rng(seed_accept, j): deterministic for a seed. The counts, the
// draw counters and both passes' iterators are the saved state.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "sluice/core/rng.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

constexpr int64_t kSmoothing = 10;  // tf.data's initial count per class

struct Mixing {
  double m = 0;                // probability of drawing from the input as it is
  std::vector<double> accept;  // per class, for the filtered pass
};

Mixing ComputeMixing(const std::vector<double>& p, const std::vector<double>& t) {
  Mixing out;
  std::vector<double> r(t.size());
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < t.size(); ++i) {
    r[i] = t[i] / (p[i] + FLT_MIN);
    lo = std::min(lo, r[i]);
    hi = std::max(hi, r[i]);
  }
  out.m = lo;
  out.accept.resize(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    // Every ratio equal (p == t): m is 1 and the filtered pass is never
    // drawn from; tf.data's 0/0 there is NaN.
    out.accept[i] = hi > lo ? (r[i] - lo) / (hi - lo) : 1.0;
  }
  return out;
}

ElementSpec ResampledSpec(const ElementSpec& in) {
  if (!in.known()) return ElementSpec::Unknown();
  std::vector<ComponentSpec> out;
  out.push_back({"class", DType::kInt32, Shape{}});
  for (const ComponentSpec& c : in.components()) out.push_back(c);
  return ElementSpec(std::move(out));
}

Element WithClass(int64_t c, Element e) {
  std::vector<Tensor> comps;
  std::vector<std::string> names;
  comps.reserve(e.size() + 1);
  names.reserve(e.size() + 1);
  comps.push_back(Tensor::Scalar<int32_t>(static_cast<int32_t>(c)));
  names.push_back("class");
  for (size_t i = 0; i < e.size(); ++i) {
    comps.push_back(std::move(e[i]));
    names.push_back(e.names()[i]);
  }
  Element out(std::move(comps), std::move(names));
  out.set_origin(e.origin_source(), e.origin_index());
  return out;
}

class RejectionResampleNode;

class RejectionResampleIterator : public IteratorNode {
 public:
  RejectionResampleIterator(IteratorContext& ctx, const RejectionResampleNode& node,
                            std::unique_ptr<IteratorNode> original,
                            std::unique_ptr<IteratorNode> filtered, uint64_t seed);

  Status Save(StateWriter& w) override {
    w.Tag("rejection_resample");
    w.U64(seed_);
    w.I64(draws_);
    w.I64(original_read_);
    w.I64(filtered_read_);
    w.I64(counted_);
    w.U64(counts_.size());
    for (int64_t c : counts_) w.I64(c);
    SLUICE_RETURN_IF_ERROR(original_->Save(w));
    return filtered_->Save(w);
  }
  Status Restore(StateReader& r) override;

 protected:
  NextResult GetNext() override;

 private:
  // The class of element `index` of a pass, checked.
  Result<int64_t> ClassOf(const Element& e, int64_t index);
  Mixing Current() const;
  // Counts the class of input position `position` if it is the next uncounted.
  void Count(int64_t position, int64_t c);

  const RejectionResampleNode& node_;
  std::unique_ptr<IteratorNode> original_, filtered_;
  uint64_t seed_;
  int64_t draws_ = 0;          // mixture draws made (outputs)
  int64_t original_read_ = 0;  // elements read by each pass
  int64_t filtered_read_ = 0;
  // Estimated p: kSmoothing + the classes of input positions [0, counted_).
  std::vector<int64_t> counts_;
  int64_t counted_ = 0;
};

class RejectionResampleNode : public DatasetNode {
 public:
  RejectionResampleNode(const Dataset& input, ClassFn fn, std::vector<double> target,
                        RejectionResampleOptions o)
      : DatasetNode("rejection_resample", o.name, {input.node()},
                    ResampledSpec(input.element_spec()),
                    input.cardinality() == 0 || input.cardinality() == kInfiniteCardinality
                        ? input.cardinality()
                        : kUnknownCardinality),
        fn_(std::move(fn)),
        target_(std::move(target)),
        o_(std::move(o)) {
    if (!o_.initial_dist.empty()) fixed_ = ComputeMixing(o_.initial_dist, target_);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto original, MakeIteratorOf(*inputs()[0], ctx, params));
    SLUICE_ASSIGN_OR_RETURN(auto filtered, MakeIteratorOf(*inputs()[0], ctx, params));
    return std::unique_ptr<IteratorNode>(std::make_unique<RejectionResampleIterator>(
        ctx, *this, std::move(original), std::move(filtered), ctx.StageSeed(this, o_.seed)));
  }
  const ClassFn& fn() const { return fn_; }
  const std::vector<double>& target() const { return target_; }
  bool estimating() const { return o_.initial_dist.empty(); }
  const Mixing& fixed() const { return fixed_; }

 private:
  ClassFn fn_;
  std::vector<double> target_;
  RejectionResampleOptions o_;
  Mixing fixed_;  // when initial_dist is given
};

RejectionResampleIterator::RejectionResampleIterator(IteratorContext& ctx,
                                                     const RejectionResampleNode& node,
                                                     std::unique_ptr<IteratorNode> original,
                                                     std::unique_ptr<IteratorNode> filtered,
                                                     uint64_t seed)
    : IteratorNode(&ctx, ctx.CountersFor(&node)),
      node_(node),
      original_(std::move(original)),
      filtered_(std::move(filtered)),
      seed_(seed),
      counts_(node.estimating() ? node.target().size() : 0, kSmoothing) {}

Status RejectionResampleIterator::Restore(StateReader& r) {
  SLUICE_RETURN_IF_ERROR(r.Tag("rejection_resample"));
  SLUICE_ASSIGN_OR_RETURN(seed_, r.U64());
  SLUICE_ASSIGN_OR_RETURN(draws_, r.I64());
  SLUICE_ASSIGN_OR_RETURN(original_read_, r.I64());
  SLUICE_ASSIGN_OR_RETURN(filtered_read_, r.I64());
  SLUICE_ASSIGN_OR_RETURN(counted_, r.I64());
  if (draws_ < 0 || original_read_ < 0 || filtered_read_ < 0 || counted_ < 0 ||
      counted_ > std::max(original_read_, filtered_read_)) {
    return Status::DataLoss("iterator state: stage '" + node_.name() + "': bad counters");
  }
  SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
  if (n != counts_.size()) {
    return Status::DataLoss("iterator state: stage '" + node_.name() + "' saved " +
                            std::to_string(n) + " class counts, it has " +
                            std::to_string(counts_.size()));
  }
  for (int64_t& c : counts_) {
    SLUICE_ASSIGN_OR_RETURN(c, r.I64());
    if (c < 0) return Status::DataLoss("iterator state: negative class count");
  }
  SLUICE_RETURN_IF_ERROR(original_->Restore(r));
  return filtered_->Restore(r);
}

void RejectionResampleIterator::Count(int64_t position, int64_t c) {
  if (node_.estimating() && position == counted_) {
    ++counts_[static_cast<size_t>(c)];
    ++counted_;
  }
}

Mixing RejectionResampleIterator::Current() const {
  if (!node_.estimating()) return node_.fixed();
  int64_t total = 0;
  for (int64_t c : counts_) total += c;
  std::vector<double> p(counts_.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<double>(counts_[i]) / total;
  return ComputeMixing(p, node_.target());
}

Result<int64_t> RejectionResampleIterator::ClassOf(const Element& e, int64_t index) {
  Result<int64_t> c = [&] {
    WorkTimer timer(this);
    return node_.fn()(e);
  }();
  if (!c.ok())
    return StageError(c.status(), node_.name(), index, e.origin_source(), e.origin_index());
  const int64_t classes = static_cast<int64_t>(node_.target().size());
  if (*c < 0 || *c >= classes) {
    return StageError(
        Status::InvalidArgument("class_func returned " + std::to_string(*c) + ", outside [0, " +
                                std::to_string(classes) + ") (target_dist has " +
                                std::to_string(classes) + " classes)"),
        node_.name(), index, e.origin_source(), e.origin_index());
  }
  return c;
}

NextResult RejectionResampleIterator::GetNext() {
  const Mixing mix = Current();
  const bool from_original =
      Rng(MixSeed(seed_, 1), static_cast<uint64_t>(draws_)).UniformDouble() < mix.m;
  if (from_original) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, original_->Next());
    if (!e) return e;
    SLUICE_ASSIGN_OR_RETURN(int64_t c, ClassOf(*e, original_read_));
    Count(original_read_++, c);
    ++draws_;
    return std::optional<Element>(WithClass(c, std::move(*e)));
  }
  for (;;) {
    if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, filtered_->Next());
    if (!e) return e;
    SLUICE_ASSIGN_OR_RETURN(int64_t c, ClassOf(*e, filtered_read_));
    const uint64_t j = static_cast<uint64_t>(filtered_read_);
    Count(filtered_read_++, c);
    const double accept = (node_.estimating() ? Current() : mix).accept[static_cast<size_t>(c)];
    if (Rng(MixSeed(seed_, 2), j).UniformDouble() < accept) {
      ++draws_;
      return std::optional<Element>(WithClass(c, std::move(*e)));
    }
  }
}

// InvalidArgument unless `dist` is a distribution over `classes` classes.
Status CheckDist(const std::vector<double>& dist, const char* what, size_t classes) {
  if (dist.size() != classes) {
    return Status::InvalidArgument("rejection_resample: " + std::string(what) + " has " +
                                   std::to_string(dist.size()) + " classes, target_dist " +
                                   std::to_string(classes));
  }
  double sum = 0;
  for (size_t i = 0; i < dist.size(); ++i) {
    if (!std::isfinite(dist[i]) || dist[i] < 0) {
      return Status::InvalidArgument("rejection_resample: " + std::string(what) + "[" +
                                     std::to_string(i) + "] is " + std::to_string(dist[i]) +
                                     "; probabilities must be finite and >= 0");
    }
    sum += dist[i];
  }
  if (std::abs(sum - 1.0) > 1e-4) {
    return Status::InvalidArgument("rejection_resample: " + std::string(what) + " sums to " +
                                   std::to_string(sum) + ", not 1");
  }
  return Status::OK();
}

}  // namespace

Dataset MakeRejectionResample(const Dataset& input, ClassFn class_fn,
                              std::vector<double> target_dist, RejectionResampleOptions options) {
  if (!class_fn) {
    return Dataset::FromError(Status::InvalidArgument("rejection_resample: class_func is empty"));
  }
  if (target_dist.empty()) {
    return Dataset::FromError(Status::InvalidArgument("rejection_resample: target_dist is empty"));
  }
  if (Status s = CheckDist(target_dist, "target_dist", target_dist.size()); !s.ok()) {
    return Dataset::FromError(s);
  }
  if (!options.initial_dist.empty()) {
    if (Status s = CheckDist(options.initial_dist, "initial_dist", target_dist.size()); !s.ok()) {
      return Dataset::FromError(s);
    }
  }
  return Dataset(std::make_shared<RejectionResampleNode>(
      input, std::move(class_fn), std::move(target_dist), std::move(options)));
}

}  // namespace sluice::pipeline_internal
