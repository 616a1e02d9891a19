// CpuGovernor: keeps the CPU a pipeline's threads use within its cpu_budget.
//
// The task arena has kOversubscription x cpu_budget slots so that calls
// which wait (file or network I/O, a remote call) do not hold the cores
// compute needs. The governor is what keeps CPU *use* within the budget: it
// hands out cpu_budget x kUnitsPerCpu units, and a thread holds units while
// it computes for the pipeline:
//  - a function call (map, sequential or parallel, also when the consumer
//    computes an element itself) holds its stage's measured CPU share of a
//    core (StageCounters::cpu_permille; a core until measured, at least
//    kMinPermille), so a compute stage gets at most cpu_budget concurrent
//    calls while calls that mostly wait overlap freely;
//  - a worker reading ahead (a parallel interleave's read of a sub-dataset,
//    an asynchronous stage's pull from its input) holds a core (or the
//    interleave's measured share) while it runs;
//  - a thread that waits (for a result, for room, for the input's lock)
//    gives its units back first (CpuIdle), and takes units again only when
//    it next computes.
// A thread blocked waiting for units holds none of this governor's, and no
// thread blocks on the governor while it holds a pipeline lock other than an
// input lock (whose other waiters hold no units), so waiting for units never
// deadlocks: the units are held by running threads, which give them back.
// After Cancel() nobody waits for units any more. The consumer's own stage
// work outside function calls (taking results, stacking a batch, shuffling)
// is not counted. Thread-safe.
#ifndef SLUICE_PIPELINE_INTERNAL_CPU_GOVERNOR_H_
#define SLUICE_PIPELINE_INTERNAL_CPU_GOVERNOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace sluice::pipeline_internal {

class CpuGovernor {
 public:
  static constexpr int64_t kUnitsPerCpu = 1000;  // a unit is 1/1000 of a core
  static constexpr int64_t kMinPermille = 50;    // what a waiting call holds at least

  explicit CpuGovernor(int cpu_budget) : capacity_(int64_t{cpu_budget} * kUnitsPerCpu) {}

  // Wakes every waiter and lets every later Take() through at once.
  void Cancel();
  int64_t capacity() const { return capacity_; }
  int64_t in_use() const { return used_.load(std::memory_order_relaxed); }
  // Time threads spent blocked waiting for units, summed over threads.
  int64_t wait_ns() const { return wait_ns_.load(std::memory_order_relaxed); }

 private:
  friend class CpuUse;
  friend class CpuIdle;
  // Blocks until `units` fit (or cancelled), then holds them.
  void Take(int64_t units);
  void Give(int64_t units);

  const int64_t capacity_;
  std::atomic<int64_t> used_{0};
  std::atomic<int> waiters_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> wait_ns_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ticket_ = 0;  // under mu_: waiters are served in order
  uint64_t serving_ = 0;
};

// The current thread computes for `gov`'s pipeline: for the scope it holds
// `permille` / 1000 of a core (clamped to [kMinPermille, 1000]). A thread
// that held more gives the excess back; one that held less gives what it
// held back and then waits for the whole amount. On exit it gives back what
// this scope added and keeps the rest (an enclosing scope does not take
// units back: a thread takes units only to compute). No-op for a null
// governor.
class CpuUse {
 public:
  CpuUse(CpuGovernor* gov, int64_t permille);
  ~CpuUse();
  CpuUse(const CpuUse&) = delete;
  CpuUse& operator=(const CpuUse&) = delete;

 private:
  CpuGovernor* const gov_;
  int64_t before_ = 0;   // what the thread held on entry
  bool pushed_ = false;  // this scope made the thread's entry for gov_
};

// The current thread is about to wait: it gives back every unit it holds
// for `gov` (and does not take them back on exit).
class CpuIdle {
 public:
  explicit CpuIdle(CpuGovernor* gov);
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_CPU_GOVERNOR_H_
