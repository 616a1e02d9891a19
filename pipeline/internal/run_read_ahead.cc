#include "sluice/pipeline/internal/run_read_ahead.h"

#include <utility>

#include "sluice/pipeline/internal/cpu_governor.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

RunReadAhead::RunReadAhead(IteratorContext& ctx, StageCounters* counters, size_t files)
    : ctx_(ctx), counters_(counters), pending_(files), charged_(files, 0) {}

RunReadAhead::~RunReadAhead() {
  std::unique_lock<std::mutex> l(shared_->mu);
  shared_->stopping = true;
  for (size_t i = 0; i < pending_.size(); ++i) DropLocked(i);
  CpuIdle idle(ctx_.cpu());
  shared_->cv.wait(l, [this] { return shared_->running == 0; });
}

void RunReadAhead::DropLocked(size_t index) {
  if (pending_[index]) {
    pending_[index]->state = State::kDropped;
    pending_[index].reset();
  }
  ctx_.memory().Release(std::exchange(charged_[index], 0));
}

void RunReadAhead::Start(const IndexedTFRecordFile& file, size_t index, const RunKey& key) {
  {
    std::lock_guard<std::mutex> l(shared_->mu);
    DropLocked(index);
  }
  const int64_t charge = static_cast<int64_t>(key.max_bytes);
  if (!ctx_.memory().TryCharge(charge)) return;
  charged_[index] = charge;
  auto p = std::make_shared<Pending>();
  p->key = key;
  {
    std::lock_guard<std::mutex> l(shared_->mu);
    pending_[index] = p;
  }
  ctx_.Submit([sh = shared_, p, &file, ctx = &ctx_, counters = counters_] {
    {
      std::lock_guard<std::mutex> l(sh->mu);
      if (sh->stopping || p->state != State::kQueued) return;  // gone or taken back
    }
    // The CPU share first: while the task waits for it the read is still
    // queued, and the iterator takes it back rather than wait for a task
    // that waits for CPU.
    CpuUse use(ctx->cpu(), counters->cpu_permille.load(std::memory_order_relaxed));
    {
      std::lock_guard<std::mutex> l(sh->mu);
      if (sh->stopping || p->state != State::kQueued) return;
      p->state = State::kRunning;
      ++sh->running;
    }
    Result<std::vector<Record>> r = file.ReadRun(p->key.first, p->key.max_bytes, p->key.stride);
    std::lock_guard<std::mutex> l(sh->mu);
    p->result = std::move(r);
    if (p->state == State::kRunning) p->state = State::kDone;
    --sh->running;
    sh->cv.notify_all();
  });
}

std::optional<Result<std::vector<Record>>> RunReadAhead::Take(size_t index, const RunKey& key) {
  std::unique_lock<std::mutex> l(shared_->mu);
  std::shared_ptr<Pending> p = pending_[index];
  if (!p || !(p->key == key)) {
    DropLocked(index);
    counters_->reads_in_place.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  pending_[index].reset();
  ctx_.memory().Release(std::exchange(charged_[index], 0));
  if (p->state == State::kQueued) {
    p->state = State::kDropped;  // its task finds it taken and leaves
    ++taken_back_;
    counters_->reads_in_place.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (p->state == State::kRunning) {
    CpuIdle idle(ctx_.cpu());
    const int64_t w0 = NowNs();
    shared_->cv.wait(l, [&] { return p->state != State::kRunning; });
    counters_->read_wait_ns.fetch_add(NowNs() - w0, std::memory_order_relaxed);
  }
  ++taken_ready_;
  counters_->reads_ahead.fetch_add(1, std::memory_order_relaxed);
  return std::move(p->result);
}

}  // namespace sluice::pipeline_internal
