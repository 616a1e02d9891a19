// IteratorContext: what all stages of one running iterator share.
//
// Owns the task arena (max_threads() slots) and the TBB flow graph in
// which asynchronous stages run their work, the cancellation flag, the RAM
// budget's accounting, the per-stage counters, the autotuner and the trace.
// Created by Dataset::iterator(), owned by the Iterator (shared with its
// stages), destroyed after every stage iterator. Thread-safe.
#ifndef SLUICE_PIPELINE_INTERNAL_CONTEXT_H_
#define SLUICE_PIPELINE_INTERNAL_CONTEXT_H_

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/tsan.h"
#include "sluice/pipeline/options.h"
#include "sluice/pipeline/stats.h"

namespace sluice::pipeline_internal {

class DatasetNode;

// Byte accounting against the RAM budget: a hard ceiling for what buffers
// hold. Thread-safe.
class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t limit) : limit_(limit) {}
  // Charges n bytes if that keeps the total within the limit.
  bool TryCharge(int64_t n);
  // Charges n bytes even past the limit: only for the one element a stage
  // must hold to make progress.
  void Charge(int64_t n);
  void Release(int64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  int64_t limit() const { return limit_; }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> peak_{0};
};

// Live counters of one stage (shared by every iterator of the same node in
// this pipeline, e.g. the per-file iterators of an interleave).
struct StageCounters {
  std::string name;
  std::string kind;
  bool async = false;  // busy_ns/wait_ns come from workers, not Next() timing
  std::vector<StageCounters*> inputs;
  std::atomic<int64_t> elements{0}, bytes{0}, total_ns{0}, busy_ns{0}, wait_ns{0};
  std::atomic<int64_t> parallelism{1}, buffer_depth{0}, buffer_capacity{0}, buffered_bytes{0};
  std::atomic<int64_t> errors_ignored{0};
  // The first kKeptErrors errors ignore_errors skipped (their messages name
  // the file and offset), under reason_mu.
  static constexpr size_t kKeptErrors = 16;
  std::vector<std::string> errors_kept;
  // Sampled calls of an async stage's function: their thread CPU time and
  // wall time. cpu/wall is the stage's CPU share: about 1 for compute,
  // near 0 for a function that waits (I/O, sleep, a remote call).
  std::atomic<int64_t> cpu_sample_ns{0}, wall_sample_ns{0};
  std::atomic<int64_t> calls{0};        // timed calls, for sampling
  std::atomic<bool> slow_calls{false};  // the last sampled call took > 20 us
  std::atomic<bool> autotuned{false};
  mutable std::mutex reason_mu;
  std::string tuner_reason;
};

// Times `calls` consecutive calls of a stage's work (a map function, a
// read-ahead): their wall time goes to busy_ns and, when sampled, their
// thread CPU time and wall time to the CPU-share samples. Reading the
// thread's CPU clock costs ~0.5 us, so a timer is sampled every time only
// when calls are slower than 20 us each, every 32nd timer otherwise.
class CallTimer {
 public:
  explicit CallTimer(StageCounters* c, int64_t calls = 1);
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  StageCounters* const c_;
  const int64_t calls_;
  const bool sampled_;
  const int64_t cpu0_;
  const int64_t wall0_;
};

// A parameter the autotuner may change while the pipeline runs.
struct Tunable {
  StageCounters* stage = nullptr;
  std::string what;  // "parallelism", "buffer_size"
  std::atomic<int64_t> value{1};
  int64_t min = 1, max = 1;
  int64_t bytes_per_unit = 0;       // estimated RAM per unit of value
  std::function<void()> on_change;  // called after value changes (any thread)
};

class Autotuner;

class IteratorContext {
 public:
  // `options`: the merged pipeline options; unset fields get defaults here.
  explicit IteratorContext(const Options& options);
  ~IteratorContext();

  int cpu_budget() const { return cpu_budget_; }
  // Threads the arena may run at once: kOversubscription x the CPU budget,
  // so that functions which wait (I/O) do not hold the cores compute needs.
  // The autotuner keeps the CPU the parallel stages use within the budget.
  int max_threads() const { return max_threads_; }
  static constexpr int kOversubscription = 4;
  uint64_t seed() const { return seed_; }
  bool deterministic() const { return deterministic_; }
  bool autotune() const { return autotune_; }
  bool map_and_batch_fusion() const { return map_and_batch_fusion_; }
  MemoryBudget& memory() { return memory_; }

  tbb::task_arena& arena() { return *arena_; }
  tbb::flow::graph& graph() { return *graph_; }
  // Runs `work` as a task of the graph (in the arena). The node lives as
  // long as the context, so a stage may be destroyed as soon as its own
  // bodies have returned.
  void Submit(std::function<void()> work) {
    SLUICE_TSAN_RELEASE(&submitted_);
    executor_->try_put(std::move(work));
  }
  const std::atomic<bool>& cancel_flag() const { return cancelled_; }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Asks every stage to stop; their destructors then wait for their tasks.
  void Cancel();

  // Stage keys. A stage is known by its place in the graph, not by its
  // node's address: the root of the pipeline's graph, or of a dataset a
  // flat_map/interleave opened (scope: that stage's key), then the input
  // index at each step down. Every sub-dataset a stage opens thus shares
  // one set of counters and the same seeds, whatever the order of opening,
  // so stats stay bounded and restored iterators draw the same numbers.
  // RegisterTree() maps the nodes of the tree under `root` to their keys
  // (counted: a node may be in several live trees); UnregisterTree() undoes
  // it once the tree's iterators are gone.
  void RegisterTree(const DatasetNode& root, uint64_t scope);
  void UnregisterTree(const DatasetNode& root);
  uint64_t KeyOf(const DatasetNode* node);

  // The counters of `node`'s stage, made on first use.
  StageCounters* CountersFor(const DatasetNode* node);
  // A seed for `node` derived from the pipeline seed and the node's key,
  // or `explicit_seed` if given.
  uint64_t StageSeed(const DatasetNode* node, std::optional<uint64_t> explicit_seed);

  // Registers a tunable (owned by the context). If autotuning is off it
  // keeps its initial value.
  Tunable* AddTunable(StageCounters* stage, std::string what, int64_t initial, int64_t min,
                      int64_t max, int64_t bytes_per_unit, std::function<void()> on_change);
  void RemoveTunable(Tunable* t);
  // Called by the consumer on every element; tunes every few ms.
  void OnConsumerElement();

  std::vector<Tunable*> TunablesSnapshot() const;
  IteratorStats Snapshot() const;
  // Microseconds since the iterator was made (trace timestamps).
  double TraceTimeUs() const;
  // Adds counter events for every stage to the trace (the tuner's tick).
  void RecordCounters(int64_t now_ns);
  // Trace events (Chrome JSON objects, one per string).
  void AddTraceEvent(std::string json);
  std::string TraceJson() const;

 private:
  friend class Autotuner;
  const int cpu_budget_;
  const int max_threads_;
  const uint64_t seed_;
  const bool deterministic_;
  const bool autotune_;
  const bool map_and_batch_fusion_;
  const int64_t start_ns_;
  MemoryBudget memory_;
  std::atomic<bool> cancelled_{false};
  char submitted_ = 0, finished_ = 0;  // addresses for the TSan annotations
  std::unique_ptr<tbb::task_arena> arena_;
  std::unique_ptr<tbb::flow::graph> graph_;
  std::unique_ptr<tbb::flow::function_node<std::function<void()>, tbb::flow::continue_msg>>
      executor_;

  mutable std::mutex mu_;
  struct Alias {
    uint64_t key = 0;
    int64_t refs = 0;  // live trees holding the node; 0: permanent
  };
  uint64_t KeyOfLocked(const DatasetNode* node);
  void RegisterLocked(const DatasetNode& node, uint64_t key);
  void UnregisterLocked(const DatasetNode& node);
  std::map<const DatasetNode*, Alias> aliases_;
  std::map<uint64_t, std::unique_ptr<StageCounters>> counters_;  // by stage key
  std::vector<StageCounters*> stage_order_;
  std::set<std::string> stage_names_;
  std::map<std::string, int> name_uses_;
  std::vector<std::unique_ptr<Tunable>> tunables_;
  std::vector<std::unique_ptr<Tunable>> kept_;  // fixed (autotune off)
  std::atomic<int64_t> consumer_elements_{0};
  std::unique_ptr<Autotuner> tuner_;
  std::mutex tuner_mu_;
  std::map<const void*, int64_t> trace_busy_;
  int64_t trace_last_ns_ = 0;

  mutable std::mutex trace_mu_;
  std::deque<std::string> trace_;
};

// Defaults for unset options.
int DefaultCpuBudget();
int64_t DefaultRamBudget();

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_CONTEXT_H_
