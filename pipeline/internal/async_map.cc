#include "sluice/pipeline/internal/async_map.h"

#include <algorithm>
#include <chrono>

#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {
constexpr auto kWaitSlice = std::chrono::milliseconds(2);
// How long a worker with a full buffer waits for room before it exits.
constexpr auto kRoomWait = std::chrono::milliseconds(1);
// A chunk aims at this much work, so the hand-off (a lock, a thread wake:
// 10-15 us on a 2-vCPU VM whose idle vCPU the host deschedules) stays a
// small share of it. BM_ParallelMapScaling/2 (39 us calls) went from 1.25x
// at 50 us to 1.6-1.7x at 200-400 us.
constexpr int64_t kChunkTargetNs = 250'000;
constexpr int64_t kMaxChunk = 64;
// Past this, a chunk stops pulling and hands over what it computed.
constexpr int64_t kChunkMaxNs = 4 * kChunkTargetNs;
// ... and at most this many bytes of results.
constexpr int64_t kMaxChunkBytes = int64_t{4} << 20;
// Results a worker may compute ahead for a consumer that collects them
// (ExpectNext; batch). Case 1 of bench-peers (batch 128, 2 workers): 8
// rather than 2 halved the context switches (perf stat, ~100 K to ~50 K in
// 8 s).
constexpr int64_t kCollectAhead = 8;

}  // namespace

AsyncMapIterator::AsyncMapIterator(IteratorContext* ctx, StageCounters* counters,
                                   std::unique_ptr<IteratorNode> input, AsyncMapConfig config)
    : IteratorNode(ctx, counters), ctx_(ctx), input_(std::move(input)), config_(std::move(config)) {
  counters->async = true;
  const int64_t cpus = ctx->cpu_budget();
  auto relaunch = [this] {
    std::lock_guard<std::mutex> l(mu_);
    LaunchLocked();
  };
  if (config_.parallelism == kAutotune) {
    parallelism_tunable_ = ctx->AddTunable(counters, "parallelism", cpus, 1,
                                           std::max<int64_t>(ctx->max_threads(), 1), 0, relaunch);
  } else {
    fixed_parallelism_ = std::max<int64_t>(1, config_.parallelism);
  }
  if (config_.buffer_size == kAutotune) {
    buffer_tunable_ = ctx->AddTunable(counters, "buffer_size", 2, 1, 64, 1, relaunch);
  } else {
    fixed_buffer_ = std::max<int64_t>(1, config_.buffer_size);
  }
  std::lock_guard<std::mutex> l(mu_);
  LaunchLocked();
}

AsyncMapIterator::~AsyncMapIterator() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    cv_.notify_all();  // workers waiting for room
  }
  {
    std::unique_lock<std::mutex> g(gate_->mu);
    gate_->open = false;
    gate_->cv.wait(g, [this] { return gate_->running == 0; });
  }
  std::unique_lock<std::mutex> l(mu_);
  ReleaseAllLocked();
  ctx_->memory().ReleaseRequired(consumer_reserved_);
  consumer_reserved_ = 0;
  l.unlock();
  if (parallelism_tunable_) ctx_->RemoveTunable(parallelism_tunable_);
  if (buffer_tunable_) ctx_->RemoveTunable(buffer_tunable_);
}

int64_t AsyncMapIterator::Parallelism() const {
  return parallelism_tunable_ ? parallelism_tunable_->value.load(std::memory_order_relaxed)
                              : fixed_parallelism_;
}

int64_t AsyncMapIterator::PreferredChunk() const {
  const int64_t ns = elem_ns_.load(std::memory_order_relaxed);
  if (ns <= 0) return 1;  // not measured yet
  int64_t k = std::clamp<int64_t>(kChunkTargetNs / ns, 1, kMaxChunk);
  const int64_t bytes = est_bytes_.load(std::memory_order_relaxed);
  if (bytes > 0) k = std::min(k, std::max<int64_t>(1, kMaxChunkBytes / bytes));
  return k;
}

int64_t AsyncMapIterator::Capacity() const {
  if (buffer_tunable_) return buffer_tunable_->value.load(std::memory_order_relaxed);
  if (config_.buffer_size > 0) return fixed_buffer_;
  // Default: two chunks per worker, so each can fill one while the
  // consumer takes the other.
  // A consumer that collects n results at a time (ExpectNext) may have up
  // to n of them computed ahead, kCollectAhead per worker at most: workers
  // then rarely find the buffer full and exit, and the consumer is woken
  // once for several.
  const int64_t p = Parallelism();
  const int64_t collect = std::min(collect_.load(std::memory_order_relaxed), kCollectAhead * p);
  return std::max(2 * p * PreferredChunk(), collect);
}

int64_t AsyncMapIterator::ChunkSize() const {
  // A set buffer bounds the chunk: half of it per worker.
  return std::min(PreferredChunk(), std::max<int64_t>(1, Capacity() / (2 * Parallelism())));
}

void AsyncMapIterator::LaunchLocked() {
  if (stopping_ || paused_ || ctx_->cancelled()) return;
  const int64_t target = Parallelism();
  counters()->parallelism.store(target, std::memory_order_relaxed);
  counters()->buffer_capacity.store(Capacity(), std::memory_order_relaxed);
  const bool done = end_seq_ >= 0;
  if (done) return;
  int64_t room = Capacity() - buffered_ - inflight_;
  while (workers_ < target && room > workers_) {
    ++workers_;
    ctx_->Submit([this, gate = gate_, gen = generation_] {
      {
        std::lock_guard<std::mutex> g(gate->mu);
        if (!gate->open) return;
        ++gate->running;
      }
      WorkerBody(gen);
      std::lock_guard<std::mutex> g(gate->mu);
      --gate->running;
      gate->cv.notify_all();
    });
  }
}

void AsyncMapIterator::LockCounted(std::unique_lock<std::mutex>& l) {
  if (l.try_lock()) return;  // uncontended: no clock read
  const int64_t w0 = NowNs();
  l.lock();
  counters()->lock_wait_ns.fetch_add(NowNs() - w0, std::memory_order_relaxed);
}

void AsyncMapIterator::WorkerBody(uint64_t generation) {
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  LockCounted(l);
  if (generation != generation_) return;  // abandoned while queued
  ++running_bodies_;
  for (;;) {
    if (stopping_ || paused_ || ctx_->cancelled() || end_seq_ >= 0 || workers_ > Parallelism()) {
      break;
    }
    const int64_t room = Capacity() - buffered_ - inflight_;
    // Until one element has been measured, only the consumer computes (its
    // elements are handed over at once, never buffered or charged).
    if (!size_known_) break;
    if (room <= 0) {
      // Full: wait a moment for the consumer to take some rather than exit.
      // A relaunch submits a task, and oneTBB then wakes every idle worker
      // of the arena to look for it (they spin, yielding, for ~100 us each).
      if (WaitForRoom(l)) continue;
      break;
    }
    int64_t k = std::min(ChunkSize(), room);
    const int64_t est = est_bytes_.load(std::memory_order_relaxed);
    if (!ctx_->memory().TryCharge(est * k)) {
      k = 1;
      if (!ctx_->memory().TryCharge(est)) break;
    }
    RunChunk(l, k, est, /*account=*/true);
  }
  --workers_;
  --running_bodies_;
  cv_.notify_all();
}

void AsyncMapIterator::RunChunk(std::unique_lock<std::mutex>& l, int64_t k, int64_t est,
                                bool account) {
  inflight_ += k;
  l.unlock();
  Chunk c;
  c.reserved = k;
  c.est = est;
  c.account = account;
  PullChunk(c);
  if (c.got() > 0 && config_.fn) ApplyChunk(l, c);
  Measured m = MeasureChunk(c, c.got());
  LockCounted(l);
  DepositLocked(c, m, c.reserved - c.got());
}

void AsyncMapIterator::PullChunk(Chunk& c) {
  c.items.reserve(static_cast<size_t>(c.reserved));
  // Waiting for the input's lock: hold no CPU (its holder may need some).
  CpuIdle idle(ctx_->cpu());
  const int64_t w0 = NowNs();
  std::unique_lock<std::mutex> in(input_mu_);
  const int64_t held0 = NowNs();
  counters()->input_wait_ns.fetch_add(held0 - w0, std::memory_order_relaxed);
  // The lock's holder is what every other worker waits for: it takes no
  // other lock unless the input ends (next_in_ and input_ended_ are the
  // pullers' own).
  struct Held {
    StageCounters* counters;
    int64_t t0;
    ~Held() { counters->input_hold_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed); }
  } held{counters(), held0};
  if (input_ended_) return;
  // Pulling computes (the input's stages run in this thread): it holds the
  // stage's share, and a function below takes what its calls need.
  CpuUse use(ctx_->cpu(), counters()->cpu_permille.load(std::memory_order_relaxed));
  c.seq0 = next_in_.load(std::memory_order_relaxed);
  // Reserved; given back below if fewer are pulled.
  next_in_.store(c.seq0 + c.reserved, std::memory_order_relaxed);
  bool ended = false;
  const int64_t t0 = NowNs();
  while (c.got() < c.reserved) {
    NextResult r = input_->Next();
    if (r.ok() && !r->has_value()) {
      ended = true;
      break;
    }
    const bool failed = !r.ok();
    c.items.push_back(std::move(r));
    c.work_ns = NowNs() - t0;
    // The input decides what follows an error; an input that turned slow
    // should not hold the consumer's next element back.
    if (failed || c.work_ns > kChunkMaxNs) break;
  }
  if (c.got() < c.reserved) {
    next_in_.store(c.seq0 + c.got(), std::memory_order_relaxed);
    if (ended) {
      input_ended_ = true;
      std::lock_guard<std::mutex> g(mu_);
      end_seq_ = c.seq0 + c.got();
    }
  }
}

void AsyncMapIterator::ApplyChunk(std::unique_lock<std::mutex>& l, Chunk& c) {
  // The calls hold the stage's CPU share (taken before the timer starts:
  // waiting for it is not the function's time).
  CpuUse use(ctx_->cpu(), counters()->cpu_permille.load(std::memory_order_relaxed));
  int64_t t0 = NowNs();
  CallTimer timer(counters(), c.got());
  for (int64_t i = 0; i < c.got(); ++i) {
    NextResult& r = c.items[static_cast<size_t>(i)];
    if (!r.ok()) continue;
    if (stopping_.load(std::memory_order_relaxed) || ctx_->cancelled()) {
      r = Status::Cancelled("pipeline cancelled");  // never returned
      continue;
    }
    MapContext mc{c.seq0 + i, config_.seed, &ctx_->cancel_flag()};
    Result<Element> out = config_.fn(std::move(**r), mc);
    if (out.ok())
      r = std::optional<Element>(std::move(out).value());
    else
      r = out.status();
    const int64_t now = NowNs();
    // Calls that turned slow: hand over what is done, then go on.
    if (now - t0 > kChunkMaxNs && i + 1 < c.got()) {
      c.work_ns += now - t0;
      Measured m = MeasureChunk(c, i + 1);
      LockCounted(l);
      DepositLocked(c, m, 0);
      l.unlock();
      c.work_ns = 0;
      t0 = NowNs();
    }
  }
  c.work_ns += NowNs() - t0;
}

AsyncMapIterator::Measured AsyncMapIterator::MeasureChunk(Chunk& c, int64_t upto) {
  Measured m;
  m.upto = upto;
  m.sizes.assign(static_cast<size_t>(upto - c.done), 0);
  const int64_t limit = ctx_->memory().limit();
  for (int64_t i = c.done; i < upto; ++i) {
    NextResult& r = c.items[static_cast<size_t>(i)];
    if (!r.ok()) continue;
    const int64_t bytes = ElementBytes(**r);
    if (bytes > limit) {
      // It cannot fit even alone: a clear error, not an overshoot.
      r = TooBigForBudget(config_.name, "element " + std::to_string(c.seq0 + i), bytes, limit);
      continue;
    }
    m.any_ok = true;
    int64_t e = est_bytes_.load(std::memory_order_relaxed);
    while (bytes > e && !est_bytes_.compare_exchange_weak(e, bytes)) {
    }
    if (c.account) {
      m.sizes[static_cast<size_t>(i - c.done)] = bytes;
      m.total += bytes;
    }
  }
  if (upto > c.done) {
    const int64_t per = std::max<int64_t>(1, c.work_ns / (upto - c.done));
    const int64_t old = elem_ns_.load(std::memory_order_relaxed);
    elem_ns_.store(old == 0 ? per : (3 * old + per) / 4, std::memory_order_relaxed);
  }
  return m;
}

void AsyncMapIterator::DepositLocked(Chunk& c, const Measured& m, int64_t unpulled) {
  const int64_t n = m.upto - c.done;
  inflight_ -= n + unpulled;
  if (m.any_ok) size_known_ = true;
  ReserveForConsumerLocked();
  if (c.account) {
    const int64_t reserved = c.est * (n + unpulled);
    if (m.total > reserved) {
      // Larger than every earlier element: the one case that may pass the
      // budget (by the difference), as the elements already exist. No
      // read-ahead starts until the total is back under the limit.
      ctx_->memory().Charge(m.total - reserved);
    } else {
      ctx_->memory().Release(reserved - m.total);
    }
  }
  for (int64_t i = c.done; i < m.upto; ++i) {
    Slot slot{std::move(c.items[static_cast<size_t>(i)]), m.sizes[static_cast<size_t>(i - c.done)]};
    if (config_.deterministic)
      ordered_.Put(c.seq0 + i, std::move(slot));
    else
      fifo_.push_back(std::move(slot));
  }
  buffered_ += n;
  counters()->buffer_depth.store(buffered_, std::memory_order_relaxed);
  counters()->buffered_bytes.fetch_add(m.total, std::memory_order_relaxed);
  c.done = m.upto;
  WakeConsumerLocked();
}

void AsyncMapIterator::WakeConsumerLocked() {
  // Wake the consumer only if it can go on with as many results as it
  // wants: a result ahead of the one it waits for would wake it for nothing
  // (with parallelism 2, half of them), and a consumer collecting a batch
  // gains nothing from being woken for each row. Pausing and the end of the
  // input need every change seen.
  const int64_t ready =
      config_.deterministic ? ordered_.ReadyRun(want_) : static_cast<int64_t>(fifo_.size());
  if (ready >= want_ || inflight_ == 0 || paused_ || stopping_ || end_seq_ >= 0) {
    cv_.notify_all();
  }
}

bool AsyncMapIterator::WaitForRoom(std::unique_lock<std::mutex>& l) {
  CpuIdle idle(ctx_->cpu());
  ++room_waiters_;
  const int64_t w0 = NowNs();
  const bool room = cv_.wait_for(l, kRoomWait, [this] {
    return stopping_ || paused_ || ctx_->cancelled() || buffered_ + inflight_ < Capacity();
  });
  counters()->room_wait_ns.fetch_add(NowNs() - w0, std::memory_order_relaxed);
  --room_waiters_;
  return room && !stopping_ && !paused_ && !ctx_->cancelled();
}

void AsyncMapIterator::ReserveForConsumerLocked() {
  const int64_t est = est_bytes_.load(std::memory_order_relaxed);
  // One more buffered result costs about this much.
  if (buffer_tunable_) buffer_tunable_->bytes_per_unit.store(std::max<int64_t>(est, 1));
  if (est > consumer_reserved_) {
    ctx_->memory().ChargeRequired(est - consumer_reserved_);
    consumer_reserved_ = est;
  }
}

void AsyncMapIterator::DrainLocked() {
  local_.clear();
  local_pos_ = 0;
  // At most half the buffer, so workers refill the rest meanwhile.
  const int64_t most = std::max<int64_t>(1, (Capacity() + 1) / 2);
  if (config_.deterministic) {
    while (static_cast<int64_t>(local_.size()) < most && ordered_.FrontReady()) {
      local_.push_back(ordered_.TakeFront());
      ++next_out_;
    }
  } else {
    while (static_cast<int64_t>(local_.size()) < most && !fifo_.empty()) {
      local_.push_back(std::move(fifo_.front()));
      fifo_.pop_front();
    }
  }
  buffered_ -= static_cast<int64_t>(local_.size());
  counters()->buffer_depth.store(buffered_, std::memory_order_relaxed);
  if (room_waiters_ > 0 && !local_.empty()) cv_.notify_all();
}

NextResult AsyncMapIterator::TakeLocal() {
  Slot& s = local_[static_cast<size_t>(local_pos_++)];
  local_returned_bytes_ += s.charged;
  return std::move(s.result);
}

void AsyncMapIterator::ExpectNext(int64_t n) {
  expected_ = n;
  collect_.store(n, std::memory_order_relaxed);
}

NextResult AsyncMapIterator::GetNext() {
  const int64_t expected = std::max<int64_t>(expected_, 1);  // this call included
  if (expected_ > 0) --expected_;
  if (local_pos_ < static_cast<int64_t>(local_.size())) return TakeLocal();
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  LockCounted(l);
  if (local_returned_bytes_ > 0) {
    ctx_->memory().Release(local_returned_bytes_);
    counters()->buffered_bytes.fetch_sub(local_returned_bytes_, std::memory_order_relaxed);
    local_returned_bytes_ = 0;
  }
  int64_t waited_from = 0;
  for (;;) {
    DrainLocked();
    if (!local_.empty()) {
      if (waited_from) counters()->wait_ns.fetch_add(NowNs() - waited_from);
      // Refill once the buffer is half empty, not after every element: a
      // launch wakes a thread, and each then fills several slots.
      if (2 * (buffered_ + inflight_) <= Capacity()) LaunchLocked();
      return TakeLocal();
    }
    const bool ended = end_seq_ >= 0;
    if (ended && inflight_ == 0 &&
        (config_.deterministic ? next_out_ >= end_seq_ : buffered_ == 0)) {
      return std::optional<Element>();
    }
    if (ctx_->cancelled()) return Status::Cancelled("pipeline cancelled");
    // Is what we need being computed by someone else? Then wait for it.
    const bool someone_on_it = inflight_ > 0 || (config_.deterministic && next_out_ < next_in_);
    if (!someone_on_it && !ended) {
      RunChunk(l, 1, 0, /*account=*/false);  // help: compute it in this thread
      continue;
    }
    if (!waited_from) waited_from = NowNs();
    LaunchLocked();
    want_ = std::min(expected, std::max<int64_t>(1, Capacity() / 2));
    CpuIdle idle(ctx_->cpu());
    cv_.wait_for(l, kWaitSlice);
    want_ = 1;
  }
}

void AsyncMapIterator::QuiesceLocked(std::unique_lock<std::mutex>& l) {
  paused_ = true;
  cv_.notify_all();  // workers waiting for room
  // Queued workers are abandoned; started ones see paused_ and exit.
  ++generation_;
  workers_ = running_bodies_;
  CpuIdle idle(ctx_->cpu());
  cv_.wait(l, [this] { return running_bodies_ == 0 && inflight_ == 0; });
  workers_ = 0;
}

void AsyncMapIterator::ReleaseAllLocked() {
  int64_t total = local_returned_bytes_;
  ordered_.ForEach([&](int64_t, const Slot& s) { total += s.charged; });
  for (auto& s : fifo_) total += s.charged;
  for (int64_t i = local_pos_; i < static_cast<int64_t>(local_.size()); ++i) {
    total += local_[static_cast<size_t>(i)].charged;
  }
  ctx_->memory().Release(total);
  counters()->buffered_bytes.fetch_sub(total, std::memory_order_relaxed);
  ordered_.Reset(ordered_.front());
  fifo_.clear();
  local_.clear();
  local_pos_ = 0;
  local_returned_bytes_ = 0;
  buffered_ = 0;
  counters()->buffer_depth.store(0, std::memory_order_relaxed);
}

int64_t AsyncMapIterator::position() const {
  std::lock_guard<std::mutex> l(mu_);
  // Results in the consumer's batch are not returned yet.
  return config_.deterministic ? next_out_ - LocalCount() : next_out_;
}

Status AsyncMapIterator::SeekTo(int64_t n) {
  std::unique_lock<std::mutex> l(mu_);
  QuiesceLocked(l);
  ReleaseAllLocked();
  Status s = input_->SeekTo(n);
  next_in_ = next_out_ = n;
  ordered_.Reset(n);
  end_seq_ = -1;
  input_ended_ = false;
  paused_ = false;
  LaunchLocked();
  return s;
}

Status AsyncMapIterator::Save(StateWriter& w) {
  std::unique_lock<std::mutex> l(mu_);
  QuiesceLocked(l);
  Status s;
  w.Tag(config_.tag);
  const bool rewind = config_.deterministic && input_->positional();
  // The consumer's batch counts as buffered: drained, not yet returned.
  const int64_t local = LocalCount();
  const int64_t out = config_.deterministic ? next_out_ - local : next_out_;
  w.Bool(rewind);
  if (rewind) {
    // Only cursors: the input, moved back to the first unreturned element.
    w.I64(out);
    s = input_->Save(w);
  } else {
    w.I64(next_in_);
    w.I64(out);
    w.I64(end_seq_);
    w.U64(static_cast<uint64_t>(buffered_ + local));
    auto put = [&](int64_t seq, const Slot& slot) {
      w.I64(seq);
      w.Bool(slot.result.ok());
      if (!slot.result.ok()) {
        w.Stat(slot.result.status());
      } else if (s.ok()) {
        s = w.Elem(**slot.result);
      }
    };
    for (int64_t i = 0; i < local; ++i) {
      put(config_.deterministic ? out + i : -1, local_[static_cast<size_t>(local_pos_ + i)]);
    }
    ordered_.ForEach(put);
    for (auto& slot : fifo_) put(-1, slot);
    if (s.ok()) s = input_->Save(w);
  }
  paused_ = false;
  LaunchLocked();
  return s;
}

Status AsyncMapIterator::Restore(StateReader& r) {
  std::unique_lock<std::mutex> l(mu_);
  QuiesceLocked(l);
  ReleaseAllLocked();
  Status s = [&]() -> Status {
    SLUICE_RETURN_IF_ERROR(r.Tag(config_.tag));
    SLUICE_ASSIGN_OR_RETURN(bool rewind, r.Bool());
    if (rewind) {
      SLUICE_ASSIGN_OR_RETURN(int64_t out, r.I64());
      SLUICE_RETURN_IF_ERROR(input_->Restore(r));
      if (!input_->positional()) {
        return Status::InvalidArgument("iterator state: stage '" + config_.name +
                                       "' was saved over a positional input");
      }
      SLUICE_RETURN_IF_ERROR(input_->SeekTo(out));
      next_in_ = next_out_ = out;
      ordered_.Reset(out);
      end_seq_ = -1;
      input_ended_ = false;
      return Status::OK();
    }
    SLUICE_ASSIGN_OR_RETURN(const int64_t next_in, r.I64());
    next_in_ = next_in;
    SLUICE_ASSIGN_OR_RETURN(next_out_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(end_seq_, r.I64());
    input_ended_ = end_seq_ >= 0;
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    ordered_.Reset(next_out_);
    // Every element pulled and not returned was buffered when saving; state
    // that says otherwise would leave next() waiting for an element nobody
    // computes.
    const bool counters_ok =
        next_out_ >= 0 && next_in_ >= next_out_ && (end_seq_ == -1 || end_seq_ == next_in_) &&
        (config_.deterministic ? n == static_cast<uint64_t>(next_in_ - next_out_)
                               : n <= static_cast<uint64_t>(next_in_));
    if (!counters_ok) {
      return Status::DataLoss("iterator state: inconsistent counters for stage '" + config_.name +
                              "'");
    }
    for (uint64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(int64_t seq, r.I64());
      SLUICE_ASSIGN_OR_RETURN(bool ok, r.Bool());
      Slot slot;
      if (ok) {
        SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
        slot.charged = ElementBytes(e);
        slot.result = std::optional<Element>(std::move(e));
      } else {
        Status st;
        SLUICE_RETURN_IF_ERROR(r.Stat(&st));
        if (st.ok()) return Status::DataLoss("iterator state: an OK error slot");
        slot.result = st;
      }
      if (config_.deterministic && (seq < next_out_ || seq >= next_in_ || ordered_.Has(seq))) {
        return Status::DataLoss("iterator state: stage '" + config_.name + "' element " +
                                std::to_string(seq) + " out of place");
      }
      if (!ctx_->memory().TryCharge(slot.charged)) {
        return Status::ResourceExhausted("restoring stage '" + config_.name +
                                         "': its buffered elements exceed the ram_budget " +
                                         std::to_string(ctx_->memory().limit()) + " bytes");
      }
      if (config_.deterministic)
        ordered_.Put(seq, std::move(slot));
      else
        fifo_.push_back(std::move(slot));
      ++buffered_;
    }
    return input_->Restore(r);
  }();
  paused_ = false;
  LaunchLocked();
  return s;
}

}  // namespace sluice::pipeline_internal
