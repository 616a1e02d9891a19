// What sample_from_datasets and choose_from_datasets share: the element
// spec of a mixture, and the sampler's draws.
//
// Draw k of a mixture seeded with `seed` is a pure function of (seed, k,
// the weights of the inputs still live): word k % 4 of the Philox block
// Rng(seed, k / 4) makes u in [0, 1) (32 bits), and u times the live
// weights' sum picks the input whose cumulative range holds it. Only
// additions and multiplications, in IEEE double: the same draw on any
// machine. An input is found exhausted when it is drawn and has nothing
// left; then (unless stop_on_empty_dataset ends the mixture) it leaves the
// live set and draw k is made again among the others.
//
// With known input cardinalities the draws can be simulated without reading
// anything (MixSimulator): what makes the mixture positional and random
// access. MixTable keeps the simulation's point every `stride` draws so
// that finding draw n's point costs at most `stride` draws. Not thread-safe
// except MixTable.
#ifndef SLUICE_PIPELINE_INTERNAL_MIXING_H_
#define SLUICE_PIPELINE_INTERNAL_MIXING_H_

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

// The most specific spec every input conforms to, or InvalidArgument naming
// `stage` and the first two inputs that disagree.
Result<ElementSpec> MixedSpec(const std::vector<Dataset>& inputs, const std::string& stage);

// Where a mixture stands before draw `draws`.
struct MixPoint {
  int64_t draws = 0;
  std::vector<int64_t> counts;  // elements read from each input
  std::vector<char> dead;       // inputs found exhausted
  bool ended = false;
  explicit MixPoint(size_t n = 0) : counts(n, 0), dead(n, 0) {}
};

// Cumulative weights of the live inputs.
class LiveWeights {
 public:
  void Reset(const std::vector<double>& weights, const std::vector<char>& dead);
  double total() const { return total_; }
  // The input draw k picks. REQUIRES: total() > 0.
  int Choose(uint64_t seed, int64_t k);

 private:
  std::vector<double> cum_;
  double total_ = 0;
  // The Philox block of draws 4b..4b+3 (one 32-bit word each), kept: the
  // next draws usually read the same block.
  uint64_t seed_ = 0, block_ = ~uint64_t{0};
  std::array<uint32_t, 4> words_{};
};

// The draws of a mixture whose every input has a known (or infinite)
// cardinality.
class MixSimulator {
 public:
  MixSimulator(const std::vector<double>* weights, const std::vector<int64_t>* cardinalities,
               uint64_t seed, bool stop_on_empty)
      : w_(*weights), card_(*cardinalities), seed_(seed), stop_(stop_on_empty) {}
  // Moves *p forward to draw n (or to its end, if it ends before).
  // REQUIRES: n >= p->draws.
  void Advance(MixPoint* p, int64_t n) const;
  // The input draw p->draws reads (its element counts[j]), finding
  // exhausted inputs on the way; -1 at the end (p->ended then). Does not
  // count the draw. `lw` must hold the weights of p's live inputs.
  int Pick(MixPoint* p, LiveWeights* lw) const;

 private:
  const std::vector<double>& w_;
  const std::vector<int64_t>& card_;
  const uint64_t seed_;
  const bool stop_;
};

// Points of the simulation of one seed, every `stride` draws (made lazily;
// a new seed starts over). Thread-safe.
class MixTable {
 public:
  MixTable(std::vector<double> weights, std::vector<int64_t> cardinalities, bool stop_on_empty,
           int64_t total_draws);
  // The point before draw n.
  MixPoint At(uint64_t seed, int64_t n) const;
  const std::vector<double>& weights() const { return w_; }
  const std::vector<int64_t>& cardinalities() const { return card_; }
  bool stop_on_empty() const { return stop_; }

 private:
  const std::vector<double> w_;
  const std::vector<int64_t> card_;
  const bool stop_;
  const int64_t stride_;
  mutable std::mutex mu_;
  mutable uint64_t seed_ = 0;
  mutable std::vector<MixPoint> points_;  // points_[i]: before draw i * stride_
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_MIXING_H_
