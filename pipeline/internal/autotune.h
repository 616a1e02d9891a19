// Autotuner: chooses kAutotune parameters while the pipeline runs.
//
// Driven from the consumer's thread (IteratorContext::OnConsumerElement):
// every period (20 ms at first, growing to 200 ms) it measures the
// consumer's throughput and each stage's busy time, and runs a hill climb:
// try one step on the most loaded tunable stage (its workers busiest), keep
// it if throughput rose by more than the noise margin, else undo it and
// leave that parameter alone for a while. A stage whose workers idle is
// stepped down to free CPU and RAM. A stage whose function mostly waits
// (thread CPU time well under its wall time: I/O) may grow past the CPU
// budget, up to the arena's threads; compute stages grow only while the
// cores all tuned stages use (parallelism x CPU share) stay within the
// budget. A buffer grows only while the RAM budget has room for another
// element. Meant to converge
// in a second or two (tf.data's period grows to 60 s); see docs/perf.md for
// what has been measured.
// Not thread-safe: one consumer thread calls Tick().
#ifndef SLUICE_PIPELINE_INTERNAL_AUTOTUNE_H_
#define SLUICE_PIPELINE_INTERNAL_AUTOTUNE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace sluice::pipeline_internal {

class IteratorContext;

// The value one step up takes a parallelism of `v` to: a stage that mostly
// waits (share < 0.5) doubles, a compute stage grows by a quarter (at least
// one), at most `max`, and cut so that the cores the tuned stages use,
// `cores` now (parallelism x CPU share, this stage included) plus `share`
// per added unit, stay within budget + 0.25. Returns v when no unit fits.
int64_t StepUp(int64_t v, int64_t max, double share, double cores, double budget);
struct Tunable;

class Autotuner {
 public:
  explicit Autotuner(IteratorContext* ctx);
  // Called on every consumer element with the element count so far.
  void MaybeTick(int64_t now_ns, int64_t consumer_elements);
  int64_t steps() const { return steps_; }
  void Forget(Tunable* t);

 private:
  struct Trial {
    Tunable* tunable = nullptr;
    int64_t old_value = 0;
    double baseline = 0;  // elements/s before the change
    bool waits = false;   // more threads for a stage that mostly waits
  };
  void Tick(int64_t now_ns, double rate);
  bool TryStep(double rate, int64_t now_ns);
  // The stage's CPU share (thread CPU time / wall time of its function
  // calls) since the last call, in [0, 1]; 1 until measured.
  double CpuShare(Tunable* t);
  void Set(Tunable* t, int64_t value, const std::string& reason);
  void Record(Tunable* t, const std::string& reason);

  IteratorContext* ctx_;
  int64_t period_ns_ = 20'000'000;
  int64_t last_ns_ = 0;
  int64_t last_elements_ = 0;
  std::map<const void*, int64_t> last_busy_;
  std::map<const void*, std::pair<int64_t, int64_t>> last_sample_;  // cpu, wall
  std::map<const Tunable*, int64_t> frozen_until_;                  // no raise before this time
  std::map<const Tunable*, int64_t> frozen_down_until_;             // no lowering before this time
  Trial trial_;
  bool has_trial_ = false;
  int64_t steps_ = 0;
  int settle_ = 0;  // periods to skip after a change so the pipeline settles
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_AUTOTUNE_H_
