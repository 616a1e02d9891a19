// InterleavePrefetcher: the slots of an interleave and the reading ahead in
// them.
//
// Holds cycle_length slots, each an open sub-dataset's iterator (put there
// and taken out by the interleave iterator) with a small buffer of results
// read ahead. With parallelism > 1 (or autotuned), tasks of the iterator's
// graph read ahead into those buffers, the slots nearest in the cycle first
// (InterleaveCycle::Nth): a task never blocks; it leaves when no slot needs
// reading, the RAM budget is reached or reading is paused, and a task whose
// slot the consumer took reads the nearest slot no task has. Until one
// element has been measured only the consumer reads (ReadHereLocked). Every
// buffered element is charged to the RAM budget, and room for the element
// the consumer reads itself stays reserved.
//
// Owns the slots (and so their sub-iterators and sub-datasets), the
// buffered results and their charges, and the parallelism Tunable when
// parallelism is autotuned. Refers to the context, the stage's counters and
// the cycle, which must outlive it.
//
// Thread-safety: one mutex, mu(), guards the slots, the buffers, the cycle
// it was given and this object's state; the interleave iterator (one
// consumer) holds it to use the slots and to call any *Locked method, and
// tasks hold it while they touch a slot. Only the consumer opens, closes or
// restores a slot. The destructor stops reading and waits for running tasks;
// a task queued but not started then finds it gone and leaves.
#ifndef SLUICE_PIPELINE_INTERNAL_INTERLEAVE_PREFETCHER_H_
#define SLUICE_PIPELINE_INTERNAL_INTERLEAVE_PREFETCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/interleave_cycle.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/pipeline/internal/sub_dataset.h"

namespace sluice::pipeline_internal {

// A result read ahead and the bytes charged for it (0 for an error).
struct InterleaveBuffered {
  NextResult result = std::optional<Element>();
  int64_t charged = 0;
};

// One place in the cycle. The interleave iterator fills and empties the
// first group of fields; the prefetcher the second.
struct InterleaveSlot {
  std::optional<SubDataset> ds;  // outlives `it`
  std::unique_ptr<IteratorNode> it;
  Element producer;    // the input element fn made `ds` from
  int64_t index = -1;  // its index in the input
  Status open_error;   // an error met opening this slot ahead, not yet returned

  std::deque<InterleaveBuffered> buf;
  bool ended = false;    // `it` returned the end (after what is in buf)
  bool pulling = false;  // someone is in it->Next()
  bool queued = false;   // a task for this slot is submitted and not finished
};

class InterleavePrefetcher {
 public:
  struct Config {
    int64_t capacity = 2;               // results buffered per slot
    bool parallel = false;              // read ahead in tasks
    int64_t parallelism = 1;            // tasks at most (the tuner's start if autotuned)
    bool autotune_parallelism = false;  // register `parallelism` with the tuner
  };
  // `stage`: the stage's name, for errors. Sets the counters' parallelism
  // (and buffer capacity when parallel).
  InterleavePrefetcher(IteratorContext& ctx, StageCounters* counters, std::string stage,
                       const InterleaveCycle& cycle, Config config);
  ~InterleavePrefetcher();
  InterleavePrefetcher(const InterleavePrefetcher&) = delete;
  InterleavePrefetcher& operator=(const InterleavePrefetcher&) = delete;

  std::mutex& mu() { return shared_->mu; }
  // Slot i of the cycle; all of them. REQUIRES: mu() held, i < cycle_length.
  InterleaveSlot& slot(size_t i) { return slots_[i]; }
  const std::vector<InterleaveSlot>& slots() const { return slots_; }
  int64_t capacity() const { return config_.capacity; }

  // Starts tasks reading ahead, nearest slots in the cycle first, up to the
  // parallelism; nothing when not parallel, before an element was measured,
  // while paused or stopping. REQUIRES: mu() held.
  void LaunchLocked();
  // Waits a short while (a few ms) for a task to read something, holding no
  // CPU share. REQUIRES: l holds mu() (held again on return).
  void WaitLocked(std::unique_lock<std::mutex>& l);
  // Stops launching and waits for every running task to leave (Save,
  // Restore); ResumeLocked() launches again. REQUIRES: l holds mu().
  void PauseLocked(std::unique_lock<std::mutex>& l);
  void ResumeLocked();

  // Takes the oldest buffered result of `s`, releasing its charge.
  // REQUIRES: mu() held, !s.buf.empty().
  NextResult TakeBufferedLocked(InterleaveSlot& s) {
    InterleaveBuffered b = std::move(s.buf.front());
    s.buf.pop_front();
    ReleaseLocked(b.charged);
    return std::move(b.result);
  }
  // The first slot (by index, not cycle order) with a buffered result; null
  // if none. REQUIRES: mu() held.
  InterleaveSlot* AnyBufferedLocked();
  // The consumer reads `s` itself (nobody else is): releases mu() for the
  // read, holding the stage's CPU share, and measures the result (which
  // becomes ResourceExhausted if larger than the whole budget). Does not
  // set s.ended. REQUIRES: l holds mu() (held again on return), s.it set,
  // !s.pulling. Inline, as it was inside the iterator's GetNext before the
  // split: it is on the consumer's path for every element.
  NextResult ReadHereLocked(std::unique_lock<std::mutex>& l, InterleaveSlot& s) {
    s.pulling = true;
    IteratorNode* it = s.it.get();
    l.unlock();
    NextResult r = ReadHoldingCpu(*it);
    MeasureLocked(l, r);
    s.pulling = false;
    cv_.notify_all();
    return r;
  }
  // Drops the buffered results of `s`, releasing their charges.
  void ReleaseBufferLocked(InterleaveSlot& s);

  // The buffered results of `s` (their count, then each element or error).
  Status SaveBuffer(StateWriter& w, const InterleaveSlot& s) const;
  // SaveBuffer's inverse, appended to s.buf and charged again. DataLoss for
  // more results than capacity() or a saved OK error. REQUIRES: mu() held.
  Status RestoreBufferLocked(StateReader& r, InterleaveSlot& s);

 private:
  // What tasks share with the prefetcher; they hold it, so a task that
  // starts after the prefetcher is destroyed finds `stopping` set and leaves.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    int64_t running = 0;  // tasks inside TaskBody
  };

  // it.Next() holding the stage's CPU share. mu() not held.
  NextResult ReadHoldingCpu(IteratorNode& it) {
    CpuUse use(ctx_->cpu(), counters_->cpu_permille.load(std::memory_order_relaxed));
    return it.Next();
  }
  int64_t Parallelism() const;
  bool Readable(const InterleaveSlot& s) const;
  std::optional<size_t> UnclaimedReadableSlotLocked() const;
  void TaskBody(std::unique_lock<std::mutex>& l, size_t i);
  bool ReadAheadLocked(std::unique_lock<std::mutex>& l, InterleaveSlot& s);
  int64_t MeasureLocked(std::unique_lock<std::mutex>& l, NextResult& r);
  // The stage's buffer counters for a buffered result charged `charged`
  // bytes (nothing for 0, an error); ReleaseLocked also releases the bytes.
  void CountBufferedLocked(int64_t charged);
  void ReleaseLocked(int64_t charged);

  IteratorContext* const ctx_;
  StageCounters* const counters_;
  const std::string stage_;
  const InterleaveCycle& cycle_;
  const Config config_;
  Tunable* parallelism_tunable_ = nullptr;  // set when parallelism is autotuned

  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::condition_variable& cv_ = shared_->cv;
  std::vector<InterleaveSlot> slots_;  // cycle_length of them, never resized
  bool stopping_ = false;
  bool paused_ = false;
  int64_t tasks_ = 0;  // tasks submitted and not finished (while this lives)
  int64_t est_bytes_ = 0;
  bool size_known_ = false;        // an element was read (and measured)
  int64_t consumer_reserved_ = 0;  // charged for the consumer's element (MeasureLocked)
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_INTERLEAVE_PREFETCHER_H_
