// ReadAhead<T>: reads an iterator would make itself, started earlier in
// tasks of the pipeline's arena.
//
// A source that knows what it will read next (TFRecordDataset's next run
// or block of each open file) starts that read here and keeps the handle;
// when it gets there it takes the result. A read whose task has not
// started (the arena's threads or the CPU budget all in use) is taken back
// and the iterator makes it in place, so a task that cannot start never
// stalls it; one in progress is waited for, holding no CPU share. A task
// takes its stage's CPU share before it claims its read (while it waits for
// the share the read is still takeable). Each read is charged to the RAM
// budget for the bytes given at Start until it is taken or dropped, and
// none starts when that does not fit. The stage's counters count the reads
// taken from tasks (reads_ahead), taken back (reads_in_place) and the time
// waited (read_wait_ns).
//
// Ownership: a read's function (and what it captures) lives with its
// handle and its task; the destructor waits for reads in progress (a queued
// task then finds it gone and leaves). What a function refers to without
// owning it must outlive this object; so must `ctx` and `counters`.
//
// Thread-safety: the iterator calls Start/Take/Drop from one thread at a
// time; tasks synchronize with it through an internal mutex.
#ifndef SLUICE_PIPELINE_INTERNAL_READ_AHEAD_H_
#define SLUICE_PIPELINE_INTERNAL_READ_AHEAD_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/cpu_governor.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

template <typename T>
class ReadAhead {
 public:
  // One read: opaque to the iterator, which holds it until Take or Drop.
  class Pending {
    friend class ReadAhead;
    enum class State { kQueued, kRunning, kDone, kDropped };
    std::function<T()> read;
    int64_t charged = 0;
    State state = State::kQueued;
    std::optional<T> result;
  };

  ReadAhead(IteratorContext& ctx, StageCounters* counters) : ctx_(ctx), counters_(counters) {}
  ~ReadAhead() {
    std::unique_lock<std::mutex> l(shared_->mu);
    shared_->stopping = true;
    CpuIdle idle(ctx_.cpu());
    shared_->cv.wait(l, [this] { return shared_->running == 0; });
  }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Starts `read` in a task, charged `charge` bytes; null (nothing started)
  // when the charge does not fit in the RAM budget.
  std::shared_ptr<Pending> Start(int64_t charge, std::function<T()> read) {
    if (!ctx_.memory().TryCharge(charge)) return nullptr;
    auto p = std::make_shared<Pending>();
    p->read = std::move(read);
    p->charged = charge;
    ctx_.Submit([sh = shared_, p, ctx = &ctx_, counters = counters_] {
      using State = typename Pending::State;
      auto claimable = [&] { return !sh->stopping && p->state == State::kQueued; };
      {
        std::lock_guard<std::mutex> l(sh->mu);
        if (!claimable()) return;  // gone or taken back
      }
      CpuUse use(ctx->cpu(), counters->cpu_permille.load(std::memory_order_relaxed));
      {
        std::lock_guard<std::mutex> l(sh->mu);
        if (!claimable()) return;
        p->state = State::kRunning;
        ++sh->running;
      }
      T r = p->read();
      std::lock_guard<std::mutex> l(sh->mu);
      p->result.emplace(std::move(r));
      if (p->state == State::kRunning) p->state = State::kDone;
      --sh->running;
      sh->cv.notify_all();
    });
    return p;
  }

  // The read's result, waiting for it if in progress; nullopt if its task
  // had not started (taken back: the caller makes the read). Resets `p`.
  // REQUIRES: p not null.
  std::optional<T> Take(std::shared_ptr<Pending>& p) {
    using State = typename Pending::State;
    std::shared_ptr<Pending> q = std::exchange(p, nullptr);
    std::unique_lock<std::mutex> l(shared_->mu);
    ctx_.memory().Release(std::exchange(q->charged, 0));
    if (q->state == State::kQueued) {
      q->state = State::kDropped;  // its task finds it taken and leaves
      CountInPlace();
      return std::nullopt;
    }
    if (q->state == State::kRunning) {
      CpuIdle idle(ctx_.cpu());
      const int64_t w0 = NowNs();
      shared_->cv.wait(l, [&] { return q->state != State::kRunning; });
      counters_->read_wait_ns.fetch_add(NowNs() - w0, std::memory_order_relaxed);
    }
    counters_->reads_ahead.fetch_add(1, std::memory_order_relaxed);
    return std::move(q->result);
  }

  // Counts a read the iterator makes in place with no read-ahead to take
  // (none was started for it, or one for other arguments).
  void CountInPlace() { counters_->reads_in_place.fetch_add(1, std::memory_order_relaxed); }

  // Gives a read up (one in progress finishes into nothing). Resets `p`;
  // nothing for null.
  void Drop(std::shared_ptr<Pending>& p) {
    if (!p) return;
    std::shared_ptr<Pending> q = std::exchange(p, nullptr);
    std::lock_guard<std::mutex> l(shared_->mu);
    ctx_.memory().Release(std::exchange(q->charged, 0));
    q->state = Pending::State::kDropped;
  }

 private:
  // What the tasks share with the owner; they hold it, so a task that
  // starts after the destructor finds `stopping` set and leaves.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    int64_t running = 0;  // tasks reading now
  };
  IteratorContext& ctx_;
  StageCounters* const counters_;
  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_READ_AHEAD_H_
