// sample_from_datasets: a random mixture of its inputs (tf.data's
// sample_from_datasets). Draw k picks input j with probability w_j over the
// sum of the live inputs' weights, as a pure function of (seed, k, the live
// inputs) (internal/mixing.h); the seed is options.seed, else the stage
// seed from the pipeline's, mixed with the iteration number when
// rerandomize_each_iteration. Weights may instead come from a dataset: one
// vector per draw (the mixture ends with it).
//
// State: the seed, the draw counter, each input's element count and whether
// it was found exhausted, then every input's own state. Not the weights: a
// state restores into a mixture built with other weights, and every input
// continues from its saved position under the new ones.
//
// Positional when every input's iterator is and every cardinality is known
// (or infinite): SeekTo(n) simulates the draws (MixTable: a point every
// `stride` draws) and moves each input to its count. After a restore under
// other weights the draws before the saved one keep the saved mixture's
// mapping (its weights travel in the state for that, and only for that), so
// a stage above that rewinds to the element its consumer reached continues
// from there under the new weights. Random access (Get) when, moreover,
// every input is random access with a known cardinality and the mixture
// does not stop on an empty input.
#include <algorithm>
#include <bit>
#include <cmath>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/mixing.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

constexpr char kStage[] = "sample_from_datasets";

void WritePoint(StateWriter& w, const MixPoint& p) {
  w.I64(p.draws);
  w.Bool(p.ended);
  for (size_t j = 0; j < p.counts.size(); ++j) {
    w.I64(p.counts[j]);
    w.Bool(p.dead[j] != 0);
  }
}

Status ReadPoint(StateReader& r, MixPoint* p) {
  SLUICE_ASSIGN_OR_RETURN(p->draws, r.I64());
  SLUICE_ASSIGN_OR_RETURN(p->ended, r.Bool());
  for (size_t j = 0; j < p->counts.size(); ++j) {
    SLUICE_ASSIGN_OR_RETURN(p->counts[j], r.I64());
    SLUICE_ASSIGN_OR_RETURN(bool dead, r.Bool());
    p->dead[j] = dead ? 1 : 0;
    if (p->counts[j] < 0) return Status::DataLoss("iterator state: bad sample_from_datasets count");
  }
  if (p->draws < 0) return Status::DataLoss("iterator state: bad sample_from_datasets draw");
  return Status::OK();
}

void WriteWeights(StateWriter& w, const std::vector<double>& v) {
  for (double x : v) w.U64(std::bit_cast<uint64_t>(x));
}

Status ReadWeights(StateReader& r, std::vector<double>* v) {
  for (double& x : *v) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t bits, r.U64());
    x = std::bit_cast<double>(bits);
  }
  return Status::OK();
}

// Checks weights (a list, or one element of a weights dataset) and scales
// them to sum to 1.
Status Normalize(std::vector<double>* w, size_t n, const std::string& what) {
  if (w->size() != n) {
    return Status::InvalidArgument(std::string(kStage) + ": " + what + " has " +
                                   std::to_string(w->size()) + " weights for " + std::to_string(n) +
                                   " datasets");
  }
  double sum = 0;
  for (size_t j = 0; j < n; ++j) {
    const double x = (*w)[j];
    if (!std::isfinite(x) || x < 0) {
      return Status::InvalidArgument(std::string(kStage) + ": " + what + " has weight " +
                                     std::to_string(x) + " for datasets[" + std::to_string(j) +
                                     "]; weights must be finite and non-negative");
    }
    sum += x;
  }
  if (!(sum > 0) || !std::isfinite(sum)) {
    return Status::InvalidArgument(std::string(kStage) + ": " + what +
                                   " has no positive weight (or a sum that is not finite)");
  }
  for (double& x : *w) x /= sum;
  return Status::OK();
}

class SampleNode;

class SampleIterator : public IteratorNode {
 public:
  SampleIterator(IteratorContext& ctx, const SampleNode& node,
                 std::vector<std::unique_ptr<IteratorNode>> inputs,
                 std::unique_ptr<IteratorNode> weights, uint64_t seed);

  Status Save(StateWriter& w) override;
  Status Restore(StateReader& r) override;
  bool positional() const override;
  int64_t position() const override { return pt_.draws; }
  Status SeekTo(int64_t n) override;

 protected:
  NextResult GetNext() override;

 private:
  Status NextWeights();

  const SampleNode& node_;
  std::vector<std::unique_ptr<IteratorNode>> inputs_;
  std::unique_ptr<IteratorNode> weights_it_;  // weights from a dataset, else null
  uint64_t seed_;
  MixPoint pt_;
  std::vector<double> w_;  // the weights of the next draw
  LiveWeights lw_;         // w_ over the live inputs
  bool have_w_ = true;     // w_ holds the next draw's weights (from the dataset)
  int64_t weights_read_ = 0;
  // Positional mapping: positions from anchor_ on follow from it under w_;
  // canonical_: the anchor is the start (MixTable applies). pending_: just
  // restored under other weights; positions before pt_ then follow from
  // old_anchor_ under old_w_ (until the first Next or SeekTo).
  MixPoint anchor_;
  bool canonical_ = true;
  bool pending_ = false;
  MixPoint old_anchor_;
  std::vector<double> old_w_;
};

class SampleNode : public DatasetNode {
 public:
  SampleNode(std::vector<std::shared_ptr<const DatasetNode>> nodes, size_t n, ElementSpec spec,
             int64_t cardinality, std::vector<double> weights, bool weights_dataset,
             std::vector<int64_t> cards, SampleFromDatasetsOptions o)
      : DatasetNode(kStage, o.name, std::move(nodes), std::move(spec), cardinality),
        n_(n),
        weights_(std::move(weights)),
        weights_dataset_(weights_dataset),
        options_(std::move(o)) {
    const bool known =
        std::all_of(cards.begin(), cards.end(), [](int64_t c) { return c != kUnknownCardinality; });
    if (!weights_dataset_ && known) {
      table_ = std::make_unique<MixTable>(weights_, std::move(cards),
                                          options_.stop_on_empty_dataset, cardinality);
    }
  }
  std::string Describe() const override { return name() + "(" + std::to_string(n_) + " datasets)"; }
  bool random_access() const override {
    if (!table_ || options_.stop_on_empty_dataset || cardinality() < 0) return false;
    for (size_t j = 0; j < n_; ++j) {
      if (!inputs()[j]->random_access() || inputs()[j]->cardinality() < 0) return false;
    }
    return true;
  }
  // Element i of iteration 0's mixture.
  Result<Element> Get(IteratorContext& ctx, int64_t i) const override {
    const uint64_t seed = SeedFor(ctx, 0);
    MixPoint p = table_->At(seed, i);
    LiveWeights lw;
    lw.Reset(weights_, p.dead);
    const int j = MixSimulator(&weights_, &table_->cardinalities(), seed, false).Pick(&p, &lw);
    if (p.draws != i || j < 0) {
      return Status::OutOfRange(name() + ": element " + std::to_string(i) + " of " +
                                std::to_string(cardinality()));
    }
    return inputs()[static_cast<size_t>(j)]->Get(ctx, p.counts[static_cast<size_t>(j)]);
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    std::vector<std::unique_ptr<IteratorNode>> its;
    for (size_t j = 0; j < n_; ++j) {
      SLUICE_ASSIGN_OR_RETURN(auto it, MakeIteratorOf(*inputs()[j], ctx, params));
      its.push_back(std::move(it));
    }
    std::unique_ptr<IteratorNode> w;
    if (weights_dataset_) {
      SLUICE_ASSIGN_OR_RETURN(w, MakeIteratorOf(*inputs()[n_], ctx, params));
    }
    return std::unique_ptr<IteratorNode>(std::make_unique<SampleIterator>(
        ctx, *this, std::move(its), std::move(w), SeedFor(ctx, params.iteration)));
  }

  size_t n() const { return n_; }
  const std::vector<double>& weights() const { return weights_; }
  const MixTable* table() const { return table_.get(); }
  bool stop_on_empty() const { return options_.stop_on_empty_dataset; }

 private:
  uint64_t SeedFor(IteratorContext& ctx, uint64_t iteration) const {
    const uint64_t seed = ctx.StageSeed(this, options_.seed);
    return options_.rerandomize_each_iteration ? MixSeed(seed, iteration) : seed;
  }

  size_t n_;
  std::vector<double> weights_;  // normalized; empty with a weights dataset
  bool weights_dataset_;
  SampleFromDatasetsOptions options_;
  std::unique_ptr<MixTable> table_;  // known cardinalities, fixed weights
};

SampleIterator::SampleIterator(IteratorContext& ctx, const SampleNode& node,
                               std::vector<std::unique_ptr<IteratorNode>> inputs,
                               std::unique_ptr<IteratorNode> weights, uint64_t seed)
    : IteratorNode(&ctx, ctx.CountersFor(&node)),
      node_(node),
      inputs_(std::move(inputs)),
      weights_it_(std::move(weights)),
      seed_(seed),
      pt_(node.n()),
      w_(weights_it_ ? std::vector<double>(node.n(), 0.0) : node.weights()),
      have_w_(!weights_it_),
      anchor_(node.n()) {
  lw_.Reset(w_, pt_.dead);
}

bool SampleIterator::positional() const {
  if (!node_.table()) return false;
  for (const auto& in : inputs_) {
    if (!in->positional()) return false;
  }
  return true;
}

Status SampleIterator::NextWeights() {
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, weights_it_->Next());
  if (!e) {
    pt_.ended = true;
    return Status::OK();
  }
  const std::string what = "weights element " + std::to_string(weights_read_++);
  const size_t n = node_.n();
  if (e->size() != 1 || (*e)[0].shape().rank() != 1 ||
      ((*e)[0].dtype() != DType::kFloat32 && (*e)[0].dtype() != DType::kFloat64)) {
    return Status::InvalidArgument(std::string(kStage) + ": " + what +
                                   " must be one float32 or float64 vector of " +
                                   std::to_string(n) + " weights, got " + e->DebugString(0));
  }
  const Tensor& t = (*e)[0];
  std::vector<double> w;
  if (t.dtype() == DType::kFloat32) {
    for (float x : t.flat<float>()) w.push_back(x);
  } else {
    for (double x : t.flat<double>()) w.push_back(x);
  }
  SLUICE_RETURN_IF_ERROR(Normalize(&w, n, what));
  w_ = std::move(w);
  lw_.Reset(w_, pt_.dead);
  have_w_ = true;
  return Status::OK();
}

NextResult SampleIterator::GetNext() {
  pending_ = false;  // from here the new weights apply
  while (!pt_.ended) {
    if (!have_w_) {
      SLUICE_RETURN_IF_ERROR(NextWeights());
      if (pt_.ended) break;
    }
    if (lw_.total() <= 0) {  // only inputs without weight are left
      pt_.ended = true;
      break;
    }
    const size_t j = static_cast<size_t>(lw_.Choose(seed_, pt_.draws));
    NextResult r = inputs_[j]->Next();
    if (!r.ok() || r->has_value()) {  // an error stands for its element
      ++pt_.draws;
      ++pt_.counts[j];
      have_w_ = !weights_it_;
      return r;
    }
    pt_.dead[j] = 1;
    lw_.Reset(w_, pt_.dead);
    if (node_.stop_on_empty()) pt_.ended = true;
  }
  return std::optional<Element>();
}

Status SampleIterator::SeekTo(int64_t n) {
  if (!positional()) return Status::Internal(std::string(kStage) + ": SeekTo, not positional");
  if (n < 0) return Status::OutOfRange(std::string(kStage) + ": negative position");
  const MixTable& table = *node_.table();
  MixSimulator sim(&w_, &table.cardinalities(), seed_, node_.stop_on_empty());
  MixPoint target;
  if (pending_) {
    pending_ = false;
    if (n < pt_.draws) {
      // A draw the saved mixture made: its weights' mapping.
      if (n < old_anchor_.draws) {
        return Status::FailedPrecondition(
            node_.name() + ": cannot move to draw " + std::to_string(n) + " before draw " +
            std::to_string(old_anchor_.draws) + ", where its weights last changed");
      }
      target = old_anchor_;
      MixSimulator(&old_w_, &table.cardinalities(), seed_, node_.stop_on_empty())
          .Advance(&target, n);
    } else {
      target = pt_;
      sim.Advance(&target, n);
    }
    anchor_ = target;
  } else if (canonical_ && (n < pt_.draws || n - pt_.draws > 4096)) {
    target = table.At(seed_, n);
  } else if (n >= pt_.draws) {
    target = pt_;
    sim.Advance(&target, n);
  } else if (n >= anchor_.draws) {
    target = anchor_;
    sim.Advance(&target, n);
  } else {
    return Status::FailedPrecondition(node_.name() + ": cannot move to draw " + std::to_string(n) +
                                      " before draw " + std::to_string(anchor_.draws) +
                                      ", where it was restored under other weights");
  }
  if (target.ended) target.draws = n;  // past the end: stays ended
  for (size_t j = 0; j < inputs_.size(); ++j) {
    if (inputs_[j]->position() != target.counts[j]) {
      SLUICE_RETURN_IF_ERROR(inputs_[j]->SeekTo(target.counts[j]));
    }
  }
  pt_ = std::move(target);
  lw_.Reset(w_, pt_.dead);
  return Status::OK();
}

Status SampleIterator::Save(StateWriter& w) {
  w.Tag(kStage);
  w.U64(inputs_.size());
  w.U64(seed_);
  WritePoint(w, pt_);
  w.Bool(weights_it_ != nullptr);
  if (weights_it_) {
    w.I64(weights_read_);
    w.Bool(have_w_);
    if (have_w_) WriteWeights(w, w_);
  }
  const bool pos = positional();
  w.Bool(pos);
  if (pos) {  // how the draws before this one map to inputs' positions
    WriteWeights(w, pending_ ? old_w_ : w_);
    WritePoint(w, pending_ ? old_anchor_ : anchor_);
  }
  if (weights_it_) SLUICE_RETURN_IF_ERROR(weights_it_->Save(w));
  for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Save(w));
  return Status::OK();
}

Status SampleIterator::Restore(StateReader& r) {
  SLUICE_RETURN_IF_ERROR(r.Tag(kStage));
  SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
  const size_t m = inputs_.size();
  if (n != m) {
    return Status::InvalidArgument("iterator state: saved by a " + std::string(kStage) + " of " +
                                   std::to_string(n) + " datasets; '" + node_.name() + "' mixes " +
                                   std::to_string(m));
  }
  SLUICE_ASSIGN_OR_RETURN(seed_, r.U64());
  MixPoint p(m);
  SLUICE_RETURN_IF_ERROR(ReadPoint(r, &p));
  SLUICE_ASSIGN_OR_RETURN(bool wds, r.Bool());
  if (wds != (weights_it_ != nullptr)) {
    return Status::InvalidArgument("iterator state: saved by a " + std::string(kStage) +
                                   (wds ? " with" : " without") +
                                   " a weights dataset; this one is not");
  }
  if (wds) {
    SLUICE_ASSIGN_OR_RETURN(weights_read_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(have_w_, r.Bool());
    if (have_w_) SLUICE_RETURN_IF_ERROR(ReadWeights(r, &w_));
  }
  SLUICE_ASSIGN_OR_RETURN(bool pos, r.Bool());
  std::vector<double> hist_w(m);
  MixPoint hist_anchor(m);
  if (pos) {
    SLUICE_RETURN_IF_ERROR(ReadWeights(r, &hist_w));
    SLUICE_RETURN_IF_ERROR(ReadPoint(r, &hist_anchor));
  }
  if (weights_it_) SLUICE_RETURN_IF_ERROR(weights_it_->Restore(r));
  for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Restore(r));
  pt_ = p;
  lw_.Reset(w_, pt_.dead);
  pending_ = false;
  if (!pos) {
    anchor_ = pt_;
    canonical_ = pt_.draws == 0;
  } else if (hist_w == w_) {
    anchor_ = hist_anchor;
    canonical_ = anchor_.draws == 0;
  } else {
    old_w_ = std::move(hist_w);
    old_anchor_ = std::move(hist_anchor);
    anchor_ = pt_;
    canonical_ = false;
    pending_ = true;
  }
  return Status::OK();
}

Status CheckInputs(const std::vector<Dataset>& inputs) {
  if (inputs.empty()) return Status::InvalidArgument(std::string(kStage) + ": no datasets given");
  for (const Dataset& d : inputs) SLUICE_RETURN_IF_ERROR(d.status());
  return Status::OK();
}

std::vector<int64_t> Cards(const std::vector<Dataset>& inputs) {
  std::vector<int64_t> c;
  for (const Dataset& d : inputs) c.push_back(d.cardinality());
  return c;
}

// Exact where it does not depend on the draws: the inputs with weight,
// summed (or infinite) when the mixture runs until they are all empty.
int64_t FixedCardinality(const std::vector<int64_t>& cards, const std::vector<double>& w,
                         bool stop_on_empty) {
  bool any_infinite = false, all_infinite = true, any_unknown = false;
  int64_t sum = 0;
  for (size_t j = 0; j < cards.size(); ++j) {
    if (w[j] <= 0) continue;
    any_infinite |= cards[j] == kInfiniteCardinality;
    all_infinite &= cards[j] == kInfiniteCardinality;
    any_unknown |= cards[j] == kUnknownCardinality;
    if (cards[j] >= 0) sum += cards[j];
  }
  if (all_infinite) return kInfiniteCardinality;
  if (stop_on_empty) return kUnknownCardinality;
  if (any_infinite) return kInfiniteCardinality;
  return any_unknown ? kUnknownCardinality : sum;
}

std::vector<std::shared_ptr<const DatasetNode>> Nodes(const std::vector<Dataset>& inputs) {
  std::vector<std::shared_ptr<const DatasetNode>> out;
  for (const Dataset& d : inputs) out.push_back(d.node());
  return out;
}

}  // namespace

Dataset MakeSampleFromDatasets(std::vector<Dataset> inputs, std::vector<double> weights,
                               SampleFromDatasetsOptions options) {
  if (Status s = CheckInputs(inputs); !s.ok()) return Dataset::FromError(s);
  if (weights.empty()) weights.assign(inputs.size(), 1.0);
  if (Status s = Normalize(&weights, inputs.size(), "weights"); !s.ok()) {
    return Dataset::FromError(s);
  }
  Result<ElementSpec> spec = MixedSpec(inputs, kStage);
  if (!spec.ok()) return Dataset::FromError(spec.status());
  std::vector<int64_t> cards = Cards(inputs);
  const int64_t card = FixedCardinality(cards, weights, options.stop_on_empty_dataset);
  const size_t n = inputs.size();
  return Dataset(std::make_shared<SampleNode>(Nodes(inputs), n, std::move(spec).value(), card,
                                              std::move(weights), false, std::move(cards),
                                              std::move(options)));
}

Dataset MakeSampleFromDatasets(std::vector<Dataset> inputs, Dataset weights,
                               SampleFromDatasetsOptions options) {
  if (Status s = CheckInputs(inputs); !s.ok()) return Dataset::FromError(s);
  if (!weights.status().ok()) return weights;
  const ElementSpec& ws = weights.element_spec();
  if (ws.known()) {
    const auto& c = ws.components();
    if (c.size() != 1 || (c[0].dtype != DType::kFloat32 && c[0].dtype != DType::kFloat64) ||
        c[0].shape.rank() != 1 ||
        (c[0].shape.dim(0) >= 0 && c[0].shape.dim(0) != static_cast<int64_t>(inputs.size()))) {
      return Dataset::FromError(
          Status::InvalidArgument(std::string(kStage) + ": the weights dataset's elements " +
                                  ws.DebugString() + " must be one float32 or float64 vector of " +
                                  std::to_string(inputs.size()) + " weights"));
    }
  }
  Result<ElementSpec> spec = MixedSpec(inputs, kStage);
  if (!spec.ok()) return Dataset::FromError(spec.status());
  std::vector<int64_t> cards = Cards(inputs);
  int64_t card = kUnknownCardinality;
  const bool all_infinite =
      std::all_of(cards.begin(), cards.end(), [](int64_t c) { return c == kInfiniteCardinality; });
  if (weights.cardinality() == 0) {
    card = 0;
  } else if (all_infinite) {
    card = weights.cardinality();  // one element per weights element
  }
  auto nodes = Nodes(inputs);
  nodes.push_back(weights.node());
  const size_t n = inputs.size();
  return Dataset(std::make_shared<SampleNode>(std::move(nodes), n, std::move(spec).value(), card,
                                              std::vector<double>{}, true, std::move(cards),
                                              std::move(options)));
}

}  // namespace sluice::pipeline_internal
