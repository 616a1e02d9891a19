#include "sluice/pipeline/internal/mixing.h"

#include <algorithm>

#include "sluice/core/rng.h"

namespace sluice::pipeline_internal {

Result<ElementSpec> MixedSpec(const std::vector<Dataset>& inputs, const std::string& stage) {
  ElementSpec spec = inputs[0].element_spec();
  for (size_t i = 1; i < inputs.size(); ++i) {
    Result<ElementSpec> s = spec.MostSpecificCompatible(inputs[i].element_spec());
    if (!s.ok()) {
      // Name the first input that disagrees with input i.
      size_t j = 0;
      while (j < i &&
             inputs[j].element_spec().MostSpecificCompatible(inputs[i].element_spec()).ok())
        ++j;
      return Status::InvalidArgument(
          stage + ": the element specs of datasets[" + std::to_string(j) + "] " +
          inputs[j].element_spec().DebugString() + " and datasets[" + std::to_string(i) + "] " +
          inputs[i].element_spec().DebugString() + " are incompatible");
    }
    spec = std::move(s).value();
  }
  return spec;
}

void LiveWeights::Reset(const std::vector<double>& weights, const std::vector<char>& dead) {
  cum_.resize(weights.size());
  double sum = 0;
  for (size_t j = 0; j < weights.size(); ++j) {
    if (!dead[j]) sum += weights[j];
    cum_[j] = sum;
  }
  total_ = sum;
}

int LiveWeights::Choose(uint64_t seed, int64_t k) {
  const uint64_t block = static_cast<uint64_t>(k) >> 2;
  if (block != block_ || seed != seed_) {
    Rng rng(seed, block);
    for (uint32_t& w : words_) w = rng.NextU32();
    seed_ = seed;
    block_ = block;
  }
  const double u = static_cast<double>(words_[static_cast<size_t>(k & 3)]) * 0x1.0p-32 * total_;
  // The first input whose cumulative weight exceeds u (dead and zero-weight
  // inputs add nothing, so they are never first).
  size_t j = 0;
  if (cum_.size() <= 16) {  // branch-free: draws are unpredictable
    for (double c : cum_) j += c <= u ? 1 : 0;
  } else {
    j = static_cast<size_t>(std::upper_bound(cum_.begin(), cum_.end(), u) - cum_.begin());
  }
  if (j < cum_.size()) return static_cast<int>(j);
  // u rounded up to the total: the last input with weight.
  j = cum_.size() - 1;
  while (j > 0 && cum_[j] == cum_[j - 1]) --j;
  return static_cast<int>(j);
}

int MixSimulator::Pick(MixPoint* p, LiveWeights* lw) const {
  while (!p->ended) {
    if (lw->total() <= 0) {
      p->ended = true;
      break;
    }
    const int j = lw->Choose(seed_, p->draws);
    const int64_t c = card_[static_cast<size_t>(j)];
    if (c < 0 || p->counts[static_cast<size_t>(j)] < c) return j;
    p->dead[static_cast<size_t>(j)] = 1;
    lw->Reset(w_, p->dead);
    if (stop_) p->ended = true;
  }
  return -1;
}

void MixSimulator::Advance(MixPoint* p, int64_t n) const {
  LiveWeights lw;
  lw.Reset(w_, p->dead);
  while (p->draws < n) {
    const int j = Pick(p, &lw);
    if (j < 0) return;
    ++p->counts[static_cast<size_t>(j)];
    ++p->draws;
  }
}

namespace {
int64_t Stride(int64_t total_draws) {
  // A Get then simulates 32 draws on average up to 4M draws, and
  // the table holds at most ~64K points; 1024 draws apart for an unknown
  // or infinite size (only seeks use it).
  if (total_draws < 0) return 1024;
  return std::max<int64_t>(64, total_draws / 65536 + 1);
}
}  // namespace

MixTable::MixTable(std::vector<double> weights, std::vector<int64_t> cardinalities,
                   bool stop_on_empty, int64_t total_draws)
    : w_(std::move(weights)),
      card_(std::move(cardinalities)),
      stop_(stop_on_empty),
      stride_(Stride(total_draws)) {}

MixPoint MixTable::At(uint64_t seed, int64_t n) const {
  MixSimulator sim(&w_, &card_, seed, stop_);
  MixPoint p;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (points_.empty() || seed != seed_) {
      points_.assign(1, MixPoint(w_.size()));
      seed_ = seed;
    }
    const size_t want = static_cast<size_t>(n / stride_);
    while (points_.size() <= want && !points_.back().ended) {
      MixPoint next = points_.back();
      sim.Advance(&next, static_cast<int64_t>(points_.size()) * stride_);
      points_.push_back(std::move(next));
    }
    p = points_[std::min(want, points_.size() - 1)];
  }
  if (p.draws < n) sim.Advance(&p, n);
  return p;
}

}  // namespace sluice::pipeline_internal
