// IteratorContext: what all stages of one running iterator share.
//
// Owns the task arena (max_threads() slots) and the TBB flow graph in
// which asynchronous stages run their work (both kept in context.cc: this
// header, which every stage includes, needs none of TBB), the cancellation
// flag, the RAM
// budget's accounting, the per-stage counters, the autotuner and the trace.
// Created by Dataset::iterator(), owned by the Iterator (shared with its
// stages), destroyed after every stage iterator. Thread-safe.
#ifndef SLUICE_PIPELINE_INTERNAL_CONTEXT_H_
#define SLUICE_PIPELINE_INTERNAL_CONTEXT_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sluice/pipeline/internal/cpu_governor.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/tsan.h"
#include "sluice/pipeline/options.h"
#include "sluice/pipeline/stats.h"

namespace sluice::pipeline_internal {

class DatasetNode;

// Byte accounting against the RAM budget (docs/pipeline.md, "RAM budget").
// Every element the pipeline holds is charged: read-ahead (async buffers,
// a parallel interleave's slot buffers, results being computed ahead) only
// if it fits (TryCharge), and what the consumer's path must hold to make
// progress (rows of a batch being built, a shuffle buffer, an in-memory
// cache, open files' read buffers, and the standing reservations that keep
// room for a batch's stacked output and for the element a consumer computes
// itself) unconditionally (Charge): read-ahead then starts nothing until
// the total is back under the limit. Thread-safe.
class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t limit) : limit_(limit) {}
  // Charges n bytes if that keeps the total within the limit (read-ahead).
  bool TryCharge(int64_t n);
  // Charges n bytes even past the limit: an element found larger than its
  // stage's estimate (it exists already), or read-ahead being restored.
  void Charge(int64_t n);
  void Release(int64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  // What the consumer's path must hold to go on: charged even past the
  // limit, and also counted apart (required()).
  void ChargeRequired(int64_t n) {
    Charge(n);
    required_.fetch_add(n, std::memory_order_relaxed);
  }
  void ReleaseRequired(int64_t n) {
    Release(n);
    required_.fetch_sub(n, std::memory_order_relaxed);
  }
  // ResourceExhausted naming `stage` (the one that just charged) when what
  // must be held alone exceeds the limit: a budget too small for the
  // pipeline, reported rather than overshot.
  Status CheckRequired(const std::string& stage) const;
  int64_t limit() const { return limit_; }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t required() const { return required_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> required_{0};
  std::atomic<int64_t> peak_{0};
};

// Bytes charged as required (MemoryBudget::ChargeRequired) for the life of
// a scope: the rows of a batch being built. Not thread-safe.
class ScopedCharge {
 public:
  explicit ScopedCharge(MemoryBudget& budget) : budget_(budget) {}
  ~ScopedCharge() { budget_.ReleaseRequired(bytes_); }
  ScopedCharge(const ScopedCharge&) = delete;
  ScopedCharge& operator=(const ScopedCharge&) = delete;
  void Add(int64_t n) {
    budget_.ChargeRequired(n);
    bytes_ += n;
  }
  int64_t bytes() const { return bytes_; }

 private:
  MemoryBudget& budget_;
  int64_t bytes_ = 0;
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
  // Asynchronous stages: their workers' time blocked on the input's lock
  // and waiting for room in the buffer, summed over workers, and the time
  // the input's lock was held (pulling from the input).
  std::atomic<int64_t> input_wait_ns{0}, room_wait_ns{0}, input_hold_ns{0};
  // Asynchronous stages: the time their workers and consumer waited for
  // the stage's own lock (depositing, collecting results).
  std::atomic<int64_t> lock_wait_ns{0};
  // Sources that read ahead (TFRecordDataset, num_parallel_reads > 1):
  // reads taken from a task, reads done in place (none ahead, or one whose
  // task had not started), and the time spent waiting for a running one.
  std::atomic<int64_t> reads_ahead{0}, reads_in_place{0}, read_wait_ns{0};
  // pack_sequences: tokens in the rows it emitted, and how many were padding.
  std::atomic<int64_t> tokens{0}, padding_tokens{0};
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
  // Recent CPU share of the sampled calls, in 1/1000 (1000: compute, or not
  // measured yet): what a call holds of the CpuGovernor.
  std::atomic<int64_t> cpu_permille{1000};
  std::atomic<bool> autotuned{false};
  mutable std::mutex reason_mu;
  std::string tuner_reason;
};

// Times `calls` consecutive calls of a stage's work (a map function, a
// read-ahead): their wall time goes to busy_ns and, when sampled, their
// thread CPU time and wall time to the CPU-share samples. Reading the
// thread's usage costs ~0.5 us, so a timer is sampled every time only when
// calls are slower than 20 us each, every 32nd timer otherwise.
//
// Waiting is told from being descheduled by the thread's voluntary context
// switches (getrusage RUSAGE_THREAD): calls that never blocked count as
// pure compute (share 1) however busy the machine is, so a loaded machine
// does not make compute look like I/O (which the tuner would then grow past
// the CPU budget); calls that blocked count their CPU time over wall time.
class CallTimer {
 public:
  // `count_busy`: add the wall time to busy_ns (a sequential stage whose
  // Next() is timed already samples only the CPU share). `sample_every`:
  // how often calls of 20 us or less are sampled.
  explicit CallTimer(StageCounters* c, int64_t calls = 1, bool count_busy = true,
                     int sample_every = 32);
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  StageCounters* const c_;
  const int64_t calls_;
  const bool count_busy_;
  const bool sampled_;
  int64_t cpu0_ = 0;
  int64_t blocks0_ = 0;  // voluntary context switches so far
  const int64_t wall0_;
};

// A parameter the autotuner may change while the pipeline runs.
struct Tunable {
  StageCounters* stage = nullptr;
  std::string what;  // "parallelism", "buffer_size"
  std::atomic<int64_t> value{1};
  int64_t min = 1, max = 1;
  // Estimated RAM per unit of value (0: none), kept current by the stage
  // (a buffer's largest element): the tuner grows a value only while one
  // more unit fits in the RAM budget.
  std::atomic<int64_t> bytes_per_unit{0};
  std::function<void()> on_change;  // called after value changes (any thread)
};

class Autotuner;

class IteratorContext {
 public:
  // `options`: the merged pipeline options; unset fields get defaults here.
  explicit IteratorContext(const Options& options);
  ~IteratorContext();

  int cpu_budget() const { return cpu_budget_; }
  // Threads the arena may run at once: Options::max_threads, by default
  // kOversubscription x the CPU budget, so that functions which wait (I/O)
  // do not hold the cores compute needs.
  // The autotuner keeps the CPU the parallel stages use within the budget.
  int max_threads() const { return max_threads_; }
  static constexpr int kOversubscription = 4;
  uint64_t seed() const { return seed_; }
  bool deterministic() const { return deterministic_; }
  bool autotune() const { return autotune_; }
  bool map_and_batch_fusion() const { return map_and_batch_fusion_; }
  MemoryBudget& memory() { return memory_; }
  // Keeps the CPU the pipeline's threads use within cpu_budget().
  CpuGovernor* cpu() { return &cpu_; }

  // Runs `work` as a task of the graph (in the arena). The node lives as
  // long as the context, so a stage may be destroyed as soon as its own
  // bodies have returned.
  void Submit(std::function<void()> work);
  const std::atomic<bool>& cancel_flag() const { return cancelled_; }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Asks every stage to stop; their destructors then wait for their tasks.
  void Cancel();
  // Waits up to `timeout_ns` for no task of the graph to be running; false
  // if some still are (a map call that is slow to return, say).
  bool WaitUntilIdle(int64_t timeout_ns) const;

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
  // One event of the Chrome trace: a stage's counters ('C', on the stage's
  // track) or an autotuner decision ('i', an instant event).
  struct TraceEvent {
    char phase = 'C';
    std::string name;  // the stage's name; "autotune <stage>" for a decision
    size_t tid = 0;    // the stage's track (its place + 1); 0 for a decision
    double ts_us = 0;
    double busy_threads = 0;  // 'C'
    int64_t buffer_depth = 0;
    int64_t parallelism = 0;
    std::string reason;  // 'i'
  };
  // Keeps the last 200,000 events.
  void AddTraceEvent(TraceEvent event);
  // The trace as Chrome JSON (JsonWriter: valid whatever the stage names).
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
  CpuGovernor cpu_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> running_tasks_{0};  // graph tasks inside their work
  char submitted_ = 0, finished_ = 0;      // addresses for the TSan annotations
  // The task arena, the flow graph and the node that runs submitted work.
  struct Executor;
  std::unique_ptr<Executor> exec_;

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
  std::deque<TraceEvent> trace_;
};

// "16 MiB (16777216 bytes)": sizes in RAM budget errors.
std::string ByteSize(int64_t bytes);
// ResourceExhausted: one element (or batch) of stage `stage` needs `bytes`,
// more than the whole ram_budget `limit`; `what` says what it is ("element
// 7", "a batch of 32 rows of up to 4 MiB, stacked").
Status TooBigForBudget(const std::string& stage, const std::string& what, int64_t bytes,
                       int64_t limit);

// Defaults for unset options.
int DefaultCpuBudget();
int64_t DefaultRamBudget();

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_CONTEXT_H_
