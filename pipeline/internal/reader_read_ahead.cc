#include "sluice/pipeline/internal/reader_read_ahead.h"

#include <utility>

#include "sluice/pipeline/internal/cpu_governor.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

RecordBlock ReadRecordBlock(TFRecordReader& reader, size_t max_bytes, IteratorContext& ctx) {
  RecordBlock b;
  size_t bytes = 0;
  do {
    ReadItem item;
    item.before = reader.next_record_number();
    item.rec = reader.Next();
    item.moved = reader.next_record_number() > item.before;
    b.stopped = !item.rec.ok() || !item.rec->has_value();
    if (!b.stopped) bytes += (*item.rec)->data.size() + 16;  // with its framing
    b.items.push_back(std::move(item));
  } while (!b.stopped && bytes < max_bytes && !ctx.cancelled());
  b.after = reader.next_record_number();
  b.buffer_bytes = static_cast<int64_t>(reader.buffer_bytes());
  return b;
}

enum class PendingState { kQueued, kRunning, kDone, kDropped };

struct ReaderReadAhead::Pending {
  std::shared_ptr<TFRecordReader> reader;
  size_t max_bytes = 0;
  int64_t charged = 0;
  PendingState state = PendingState::kQueued;
  RecordBlock block;
};

// What the tasks share with the owner; they hold it, so a task that starts
// after the destructor finds `stopping` set and leaves.
struct ReaderReadAhead::Shared {
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  int64_t running = 0;  // tasks reading now
};

ReaderReadAhead::ReaderReadAhead(IteratorContext& ctx, StageCounters* counters)
    : ctx_(ctx), counters_(counters), shared_(std::make_shared<Shared>()) {}

ReaderReadAhead::~ReaderReadAhead() {
  std::unique_lock<std::mutex> l(shared_->mu);
  shared_->stopping = true;
  CpuIdle idle(ctx_.cpu());
  shared_->cv.wait(l, [this] { return shared_->running == 0; });
}

std::shared_ptr<ReaderReadAhead::Pending> ReaderReadAhead::Start(
    std::shared_ptr<TFRecordReader> reader, size_t max_bytes) {
  const int64_t charge = static_cast<int64_t>(max_bytes);
  if (!ctx_.memory().TryCharge(charge)) return nullptr;
  auto p = std::make_shared<Pending>();
  p->reader = std::move(reader);
  p->max_bytes = max_bytes;
  p->charged = charge;
  ctx_.Submit([sh = shared_, p, ctx = &ctx_, counters = counters_] {
    {
      std::lock_guard<std::mutex> l(sh->mu);
      if (sh->stopping || p->state != PendingState::kQueued) return;  // gone or taken back
    }
    // The CPU share first: while the task waits for it the read is still
    // queued, and the iterator takes it back rather than wait for it.
    CpuUse use(ctx->cpu(), counters->cpu_permille.load(std::memory_order_relaxed));
    {
      std::lock_guard<std::mutex> l(sh->mu);
      if (sh->stopping || p->state != PendingState::kQueued) return;
      p->state = PendingState::kRunning;
      ++sh->running;
    }
    RecordBlock b = ReadRecordBlock(*p->reader, p->max_bytes, *ctx);
    std::lock_guard<std::mutex> l(sh->mu);
    p->block = std::move(b);
    if (p->state == PendingState::kRunning) p->state = PendingState::kDone;
    --sh->running;
    sh->cv.notify_all();
  });
  return p;
}

std::optional<RecordBlock> ReaderReadAhead::Take(std::shared_ptr<Pending>& p) {
  std::shared_ptr<Pending> q = std::exchange(p, nullptr);
  std::unique_lock<std::mutex> l(shared_->mu);
  ctx_.memory().Release(std::exchange(q->charged, 0));
  if (q->state == PendingState::kQueued) {
    q->state = PendingState::kDropped;  // its task finds it taken and leaves
    counters_->reads_in_place.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (q->state == PendingState::kRunning) {
    CpuIdle idle(ctx_.cpu());
    const int64_t w0 = NowNs();
    shared_->cv.wait(l, [&] { return q->state != PendingState::kRunning; });
    counters_->read_wait_ns.fetch_add(NowNs() - w0, std::memory_order_relaxed);
  }
  counters_->reads_ahead.fetch_add(1, std::memory_order_relaxed);
  return std::move(q->block);
}

void ReaderReadAhead::Drop(std::shared_ptr<Pending>& p) {
  if (!p) return;
  std::shared_ptr<Pending> q = std::exchange(p, nullptr);
  std::lock_guard<std::mutex> l(shared_->mu);
  ctx_.memory().Release(std::exchange(q->charged, 0));
  q->state = PendingState::kDropped;
}

}  // namespace sluice::pipeline_internal
