#include "sluice/pipeline/internal/interleave_prefetcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace sluice::pipeline_internal {
namespace {
constexpr auto kWaitSlice = std::chrono::milliseconds(2);

// A task's it.Next(), timed, holding the stage's CPU share (taken before the
// timer starts); not read after cancellation. mu() not held.
NextResult ReadAhead(IteratorContext& ctx, StageCounters* counters, IteratorNode& it) {
  CpuUse use(ctx.cpu(), counters->cpu_permille.load(std::memory_order_relaxed));
  if (ctx.cancelled()) return Status::Cancelled("pipeline cancelled");
  CallTimer timer(counters);
  return it.Next();
}
}  // namespace

InterleavePrefetcher::InterleavePrefetcher(IteratorContext& ctx, StageCounters* counters,
                                           std::string stage, const InterleaveCycle& cycle,
                                           Config config)
    : ctx_(&ctx),
      counters_(counters),
      stage_(std::move(stage)),
      cycle_(cycle),
      config_(config),
      slots_(static_cast<size_t>(cycle.cycle_length())) {
  counters_->parallelism.store(config_.parallelism, std::memory_order_relaxed);
  if (config_.autotune_parallelism) {
    // No more tasks than open datasets; waiting reads may pass the CPU
    // budget (the tuner watches their CPU share).
    parallelism_tunable_ = ctx.AddTunable(
        counters_, "parallelism", config_.parallelism, 1,
        std::max<int64_t>(1, std::min<int64_t>(cycle.cycle_length(), ctx.max_threads())), 0,
        [this] {
          std::lock_guard<std::mutex> l(mu());
          LaunchLocked();
        });
  }
  if (config_.parallel) {
    counters_->buffer_capacity.store(config_.capacity * cycle.cycle_length(),
                                     std::memory_order_relaxed);
  }
}

InterleavePrefetcher::~InterleavePrefetcher() {
  std::unique_lock<std::mutex> l(mu());
  stopping_ = true;
  shared_->stopping = true;
  // Tasks queued but not started will see `stopping` and not touch this.
  CpuIdle idle(ctx_->cpu());
  cv_.wait(l, [this] { return shared_->running == 0; });
  for (InterleaveSlot& s : slots_) ReleaseBufferLocked(s);
  ctx_->memory().ReleaseRequired(consumer_reserved_);
  consumer_reserved_ = 0;
  l.unlock();
  for (InterleaveSlot& s : slots_) {
    s.it.reset();
    s.ds.reset();
  }
  if (parallelism_tunable_) ctx_->RemoveTunable(parallelism_tunable_);
}

int64_t InterleavePrefetcher::Parallelism() const {
  return parallelism_tunable_ ? parallelism_tunable_->value.load(std::memory_order_relaxed)
                              : config_.parallelism;
}

void InterleavePrefetcher::WaitLocked(std::unique_lock<std::mutex>& l) {
  CpuIdle idle(ctx_->cpu());
  cv_.wait_for(l, kWaitSlice);
}

void InterleavePrefetcher::PauseLocked(std::unique_lock<std::mutex>& l) {
  paused_ = true;
  CpuIdle idle(ctx_->cpu());
  cv_.wait(l, [this] { return shared_->running == 0; });
}

void InterleavePrefetcher::ResumeLocked() {
  paused_ = false;
  LaunchLocked();
}

InterleaveSlot* InterleavePrefetcher::AnyBufferedLocked() {
  for (InterleaveSlot& s : slots_) {
    if (!s.buf.empty()) return &s;
  }
  return nullptr;
}

// Re-locks `l` (released for a read of `r`), then measures what was read:
// the estimate grows, room stays reserved for the consumer's element, and
// an element larger than the whole budget becomes a ResourceExhausted
// error. Returns its bytes (0 for an error or the end).
int64_t InterleavePrefetcher::MeasureLocked(std::unique_lock<std::mutex>& l, NextResult& r) {
  int64_t bytes = r.ok() && r->has_value() ? ElementBytes(**r) : 0;
  const int64_t limit = ctx_->memory().limit();
  if (bytes > limit) {
    r = TooBigForBudget(stage_, "an element read from sub-dataset", bytes, limit);
    bytes = 0;
  }
  l.lock();
  if (bytes > 0 || (r.ok() && r->has_value())) size_known_ = true;
  est_bytes_ = std::max(est_bytes_, bytes);
  if (est_bytes_ > consumer_reserved_) {
    ctx_->memory().ChargeRequired(est_bytes_ - consumer_reserved_);
    consumer_reserved_ = est_bytes_;
  }
  return bytes;
}

void InterleavePrefetcher::CountBufferedLocked(int64_t charged) {
  if (charged == 0) return;
  counters_->buffered_bytes.fetch_add(charged, std::memory_order_relaxed);
  counters_->buffer_depth.fetch_add(1, std::memory_order_relaxed);
}

void InterleavePrefetcher::ReleaseLocked(int64_t charged) {
  if (charged == 0) return;
  ctx_->memory().Release(charged);
  counters_->buffered_bytes.fetch_sub(charged, std::memory_order_relaxed);
  counters_->buffer_depth.fetch_sub(1, std::memory_order_relaxed);
}

void InterleavePrefetcher::ReleaseBufferLocked(InterleaveSlot& s) {
  for (InterleaveBuffered& b : s.buf) ReleaseLocked(b.charged);
  s.buf.clear();
}

void InterleavePrefetcher::LaunchLocked() {
  if (!config_.parallel || !size_known_ || stopping_ || paused_ || ctx_->cancelled()) return;
  const int64_t parallelism = Parallelism();
  counters_->parallelism.store(parallelism, std::memory_order_relaxed);
  for (int64_t k = 0; k < cycle_.cycle_length() && tasks_ < parallelism; ++k) {
    const size_t i = cycle_.Nth(k);
    InterleaveSlot& s = slots_[i];
    if (!Readable(s) || s.queued) continue;
    s.queued = true;
    ++tasks_;
    ctx_->Submit([sh = shared_, this, i] {
      std::unique_lock<std::mutex> l(sh->mu);
      if (sh->stopping) return;  // the prefetcher is gone or going
      ++sh->running;
      TaskBody(l, i);
      --sh->running;
      sh->cv.notify_all();
    });
  }
}

// A slot a task may read ahead in: open, not ended, not being read, room in
// its buffer.
bool InterleavePrefetcher::Readable(const InterleaveSlot& s) const {
  return s.it && !s.ended && !s.pulling && static_cast<int64_t>(s.buf.size()) < config_.capacity;
}

// Reads ahead in slot i while there is room; when the slot cannot be read
// (the consumer got to it first, it is full or ended), goes on with the
// nearest readable slot no task has, so that a task launched for the slot
// the consumer then read itself is not wasted. REQUIRES: l holds mu().
void InterleavePrefetcher::TaskBody(std::unique_lock<std::mutex>& l, size_t i) {
  for (;;) {
    if (stopping_ || paused_ || ctx_->cancelled()) break;
    if (!Readable(slots_[i])) {
      const std::optional<size_t> next = UnclaimedReadableSlotLocked();
      if (!next) break;
      slots_[i].queued = false;
      i = *next;
      slots_[i].queued = true;
      continue;
    }
    if (!ReadAheadLocked(l, slots_[i])) break;
  }
  slots_[i].queued = false;
  --tasks_;
}

// The readable slot nearest in the cycle that no task has. REQUIRES: mu().
std::optional<size_t> InterleavePrefetcher::UnclaimedReadableSlotLocked() const {
  for (int64_t k = 0; k < cycle_.cycle_length(); ++k) {
    const size_t j = cycle_.Nth(k);
    if (Readable(slots_[j]) && !slots_[j].queued) return j;
  }
  return std::nullopt;
}

// Reads one element ahead into the readable slot `s`, charged to the RAM
// budget; false (nothing read) if it does not fit. REQUIRES: l holds mu()
// (released for the read).
bool InterleavePrefetcher::ReadAheadLocked(std::unique_lock<std::mutex>& l, InterleaveSlot& s) {
  const int64_t est = est_bytes_;
  // Until an element has been measured only the consumer reads (what it
  // reads is handed over, not buffered); then every read ahead must fit, a
  // slot's first as much as the others.
  if (!size_known_ || !ctx_->memory().TryCharge(est)) return false;
  s.pulling = true;
  IteratorNode* it = s.it.get();
  l.unlock();
  NextResult r = ReadAhead(*ctx_, counters_, *it);
  const int64_t bytes = MeasureLocked(l, r);
  s.pulling = false;
  if (r.ok() && !r->has_value()) {
    ctx_->memory().Release(est);
    s.ended = true;
  } else {
    // Larger than every earlier element: it exists already, so it is
    // charged past the limit, and no read ahead starts until the total is
    // back under it.
    if (bytes > est)
      ctx_->memory().Charge(bytes - est);
    else
      ctx_->memory().Release(est - bytes);
    // Errors are buffered uncharged (charged == 0 also skips the counters).
    s.buf.push_back(InterleaveBuffered{std::move(r), bytes});
    CountBufferedLocked(bytes);
  }
  cv_.notify_all();
  return true;
}

Status InterleavePrefetcher::SaveBuffer(StateWriter& w, const InterleaveSlot& s) const {
  w.U64(s.buf.size());
  for (const InterleaveBuffered& b : s.buf) {
    w.Bool(b.result.ok());
    if (b.result.ok())
      SLUICE_RETURN_IF_ERROR(w.Elem(**b.result));
    else
      w.Stat(b.result.status());
  }
  return Status::OK();
}

Status InterleavePrefetcher::RestoreBufferLocked(StateReader& r, InterleaveSlot& s) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
  if (n > static_cast<uint64_t>(config_.capacity)) {
    return Status::DataLoss("iterator state: stage '" + stage_ + "' has an oversized slot buffer");
  }
  for (uint64_t k = 0; k < n; ++k) {
    SLUICE_ASSIGN_OR_RETURN(bool ok, r.Bool());
    InterleaveBuffered b;
    if (ok) {
      SLUICE_ASSIGN_OR_RETURN(Element x, r.Elem());
      b.charged = ElementBytes(x);
      b.result = std::optional<Element>(std::move(x));
    } else {
      Status st;
      SLUICE_RETURN_IF_ERROR(r.Stat(&st));
      if (st.ok()) return Status::DataLoss("iterator state: an OK error slot");
      b.result = st;
    }
    if (b.charged) {
      ctx_->memory().Charge(b.charged);
      CountBufferedLocked(b.charged);
    }
    s.buf.push_back(std::move(b));
  }
  return Status::OK();
}

}  // namespace sluice::pipeline_internal
