// AsyncMapIterator: the one mechanism behind parallel map and prefetch.
//
// Workers run as tasks of the iterator's TBB flow graph (its executor
// function_node, unlimited concurrency; the arena caps real concurrency at
// IteratorContext::max_threads()). Calls of the function are timed, and
// sampled for thread CPU time, so the autotuner can tell compute from waits.
//
// Work moves in chunks: a worker pulls a run of consecutive input elements
// (the input is pulled by one thread at a time, which numbers them), applies
// the function (none for prefetch) to each and deposits the results under
// one lock; the consumer moves every ready result into a private batch under
// one lock and then returns them without locking. A chunk is sized from the
// measured cost per element to take ~kChunkTargetNs, so cheap elements pay
// the thread hand-off once per chunk while expensive ones go one at a time.
//
// A worker exits rather than blocks when the RAM budget is reached or the
// target parallelism dropped; when the buffer is full it waits at most 1 ms
// for room first (a relaunch submits a task, and oneTBB then wakes every
// idle worker of the arena to spin for it). The consumer relaunches workers
// as it takes elements. The consumer takes results in input order
// (deterministic, via a reorder ring) or in completion order; if the result
// it needs is not being computed by anyone it computes it itself rather than
// wait, so nested stages can never all wait on each other.
//
// A consumer that collects results (batch: ExpectNext(n)) lets the buffer
// grow to n (at most kCollectAhead per worker) and is woken when as many as
// it still needs (at most half the buffer) are ready in a row, not for each.
//
// Saving pauses the workers. Over a positional input the state is the
// input's cursor rewound to the first unconsumed element (buffered results
// are recomputed after restore); otherwise buffered results are saved.
#ifndef SLUICE_PIPELINE_INTERNAL_ASYNC_MAP_H_
#define SLUICE_PIPELINE_INTERNAL_ASYNC_MAP_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/reorder_ring.h"

namespace sluice::pipeline_internal {

struct AsyncMapConfig {
  MapFn fn;                 // empty: identity (prefetch)
  int64_t parallelism = 1;  // workers, or kAutotune
  int64_t buffer_size = 0;  // results buffered, or kAutotune; 0: 2 x parallelism
  bool deterministic = true;
  uint64_t seed = 0;
  std::string name;  // for error messages
  std::string tag;   // for saved state
};

class AsyncMapIterator : public IteratorNode {
 public:
  AsyncMapIterator(IteratorContext* ctx, StageCounters* counters,
                   std::unique_ptr<IteratorNode> input, AsyncMapConfig config);
  ~AsyncMapIterator() override;

  Status Save(StateWriter& w) override;
  Status Restore(StateReader& r) override;
  bool positional() const override { return input_->positional(); }
  int64_t position() const override;
  Status SeekTo(int64_t n) override;
  void ExpectNext(int64_t n) override;

 protected:
  NextResult GetNext() override;

 private:
  struct Slot {
    NextResult result = std::optional<Element>();
    int64_t charged = 0;
  };
  int64_t Parallelism() const;
  int64_t Capacity() const;
  // Elements per chunk for the measured cost and size of an element.
  int64_t PreferredChunk() const;
  // PreferredChunk(), bounded by a set buffer size.
  int64_t ChunkSize() const;
  // Locks mu_ through `l` (deferred), counting the time it waited for it
  // (StageCounters::lock_wait_ns) when it was held by another thread.
  void LockCounted(std::unique_lock<std::mutex>& l);
  // REQUIRES: mu_ held. Starts workers up to the target.
  void LaunchLocked();
  void WorkerBody(uint64_t generation);
  // A worker's (or the helping consumer's) run of consecutive elements:
  // pulled together, computed, and deposited in the buffer, all of them at
  // the end or in pieces when calls turn slow.
  struct Chunk {
    int64_t reserved = 0;  // units counted in inflight_ (and seqs taken)
    int64_t est = 0;       // bytes charged per unit, if `account`
    bool account = false;  // read-ahead charged to the RAM budget
    int64_t seq0 = 0;      // seq of items[0]
    std::vector<NextResult> items;
    int64_t done = 0;     // items[0, done) deposited
    int64_t work_ns = 0;  // pull + compute ns of items[done, ...)
    int64_t got() const { return static_cast<int64_t>(items.size()); }
  };
  // Sizes of items[done, upto) of a chunk, measured before they are
  // deposited (an element larger than the whole budget became an error).
  struct Measured {
    int64_t upto = 0;
    std::vector<int64_t> sizes;  // charged bytes per item (0 if not accounted)
    int64_t total = 0;
    bool any_ok = false;
  };
  // REQUIRES: mu_ held (released while working, held again on return).
  // Pulls, computes and deposits up to `k` elements; if `account`, `est`
  // bytes were reserved for each.
  void RunChunk(std::unique_lock<std::mutex>& l, int64_t k, int64_t est, bool account);
  // Pulls up to c.reserved elements from the input (under input_mu_; mu_
  // not held), reserving their seqs and marking the end of the input.
  void PullChunk(Chunk& c);
  // Calls the function on every pulled element (mu_ not held); when calls
  // turn slow, deposits what is done through `l` and goes on.
  void ApplyChunk(std::unique_lock<std::mutex>& l, Chunk& c);
  // mu_ not held. Measures items[c.done, upto): sizes, the byte estimate,
  // the smoothed time per element.
  Measured MeasureChunk(Chunk& c, int64_t upto);
  // REQUIRES: mu_ held. Moves the measured items into the buffer, settles
  // their RAM charge (`unpulled` reserved units end with them) and wakes the
  // consumer if it can go on.
  void DepositLocked(Chunk& c, const Measured& m, int64_t unpulled);
  // REQUIRES: mu_ held. Wakes the consumer if the results it wants are ready.
  void WakeConsumerLocked();
  // REQUIRES: mu_ held. Waits up to kRoomWait for the buffer to have room;
  // false if it did not, or if the worker must stop.
  bool WaitForRoom(std::unique_lock<std::mutex>& l);
  // REQUIRES: mu_ held. Keeps room for one element of the current estimate
  // for the consumer's hands (the element it computes itself, or takes):
  // read-ahead leaves it free.
  void ReserveForConsumerLocked();
  // REQUIRES: mu_ held. Moves ready results into the consumer's batch.
  void DrainLocked();
  // Returns the next result of the consumer's batch.
  NextResult TakeLocal();
  int64_t LocalCount() const { return static_cast<int64_t>(local_.size()) - local_pos_; }
  // REQUIRES: mu_ held. Stops workers and waits for them.
  void QuiesceLocked(std::unique_lock<std::mutex>& l);
  void ReleaseAllLocked();

  IteratorContext* const ctx_;
  std::unique_ptr<IteratorNode> input_;
  const AsyncMapConfig config_;
  Tunable* parallelism_tunable_ = nullptr;
  Tunable* buffer_tunable_ = nullptr;
  int64_t fixed_parallelism_ = 1;
  int64_t fixed_buffer_ = 1;

  // Serializes input_->Next(); taken before mu_, never after, and held with
  // mu_ only when the input ends.
  std::mutex input_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Set by the destructor under mu_; also read without it between calls.
  std::atomic<bool> stopping_{false};
  bool paused_ = false;         // save/restore
  int64_t workers_ = 0;         // WorkerBody tasks put and not finished
  int64_t running_bodies_ = 0;  // WorkerBody calls started and not finished
  int64_t inflight_ = 0;        // elements being pulled or computed
  // Seq of the next element pulled: written under input_mu_ (or with the
  // workers quiesced), read by the consumer under mu_.
  std::atomic<int64_t> next_in_{0};
  bool input_ended_ = false;   // under input_mu_: the input returned its end
  int64_t next_out_ = 0;       // seq of the next result drained (deterministic)
  int64_t end_seq_ = -1;       // under mu_ (set under both): seq at which the input ended
  ReorderRing<Slot> ordered_;  // deterministic results by seq
  std::deque<Slot> fifo_;      // non-deterministic results
  int64_t room_waiters_ = 0;   // workers in WaitForRoom
  int64_t buffered_ = 0;       // in ordered_/fifo_ (not the consumer's batch)
  // Ready results in a row the waiting consumer wants before it is woken:
  // up to what it announced (ExpectNext), at most half the buffer, else 1.
  int64_t want_ = 1;
  std::atomic<int64_t> est_bytes_{0};
  int64_t consumer_reserved_ = 0;  // charged for the consumer's element (ReserveForConsumerLocked)
  std::atomic<int64_t> elem_ns_{0};  // smoothed pull + compute ns per element
  bool size_known_ = false;
  // The consumer's batch (touched by the consumer thread only): results
  // drained and not yet returned, still charged to the RAM budget. Charges
  // of returned ones are released at the next drain, in one step.
  std::vector<Slot> local_;
  int64_t local_pos_ = 0;
  int64_t local_returned_bytes_ = 0;
  int64_t expected_ = 0;             // Next() calls the consumer announced and has not made
  std::atomic<int64_t> collect_{0};  // the last ExpectNext(n): n, for Capacity()
  // Worker tasks queued but not started may outlive this iterator (or a
  // pause): they check the gate first and touch nothing if it is closed or
  // their generation is stale. Only started bodies are waited for, so a
  // destructor never waits for a task that needs a free thread to start.
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = true;
    int running = 0;
  };
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  uint64_t generation_ = 0;  // bumped when queued workers are abandoned
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_ASYNC_MAP_H_
