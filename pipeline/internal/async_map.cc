#include "sluice/pipeline/internal/async_map.h"

#include <algorithm>
#include <chrono>

#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {
constexpr auto kWaitSlice = std::chrono::milliseconds(2);

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
  }
  {
    std::unique_lock<std::mutex> g(gate_->mu);
    gate_->open = false;
    gate_->cv.wait(g, [this] { return gate_->running == 0; });
  }
  std::unique_lock<std::mutex> l(mu_);
  ReleaseAllLocked();
  l.unlock();
  if (parallelism_tunable_) ctx_->RemoveTunable(parallelism_tunable_);
  if (buffer_tunable_) ctx_->RemoveTunable(buffer_tunable_);
}

int64_t AsyncMapIterator::Parallelism() const {
  return parallelism_tunable_ ? parallelism_tunable_->value.load(std::memory_order_relaxed)
                              : fixed_parallelism_;
}

int64_t AsyncMapIterator::Capacity() const {
  if (buffer_tunable_) return buffer_tunable_->value.load(std::memory_order_relaxed);
  if (config_.buffer_size > 0) return fixed_buffer_;
  return 2 * Parallelism();
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

void AsyncMapIterator::WorkerBody(uint64_t generation) {
  std::unique_lock<std::mutex> l(mu_);
  if (generation != generation_) return;  // abandoned while queued
  ++running_bodies_;
  for (;;) {
    if (stopping_ || paused_ || ctx_->cancelled() || end_seq_ >= 0 || workers_ > Parallelism() ||
        buffered_ + inflight_ >= Capacity()) {
      break;
    }
    // Until one element has been measured, only the consumer computes (its
    // elements are handed over at once, never buffered or charged).
    if (!size_known_) break;
    const int64_t est = est_bytes_.load(std::memory_order_relaxed);
    if (!ctx_->memory().TryCharge(est)) break;
    RunOne(l, est, /*account=*/true);
  }
  --workers_;
  --running_bodies_;
  cv_.notify_all();
}

void AsyncMapIterator::RunOne(std::unique_lock<std::mutex>& l, int64_t charged, bool account) {
  ++inflight_;
  l.unlock();
  int64_t seq;
  NextResult r = std::optional<Element>();
  bool ended = false;
  {
    std::lock_guard<std::mutex> in(input_mu_);
    {
      std::lock_guard<std::mutex> g(mu_);
      seq = next_in_;
      if (end_seq_ >= 0)
        ended = true;
      else
        ++next_in_;
    }
    if (!ended) {
      r = input_->Next();
      if (r.ok() && !r->has_value()) {
        std::lock_guard<std::mutex> g(mu_);
        end_seq_ = seq;
        ended = true;
      }
    }
  }
  int64_t bytes = 0;
  if (!ended && r.ok()) {
    if (config_.fn) {
      Element in = std::move(**r);
      MapContext mc{seq, config_.seed, &ctx_->cancel_flag()};
      Result<Element> out = [&] {
        CallTimer timer(counters());
        return config_.fn(std::move(in), mc);
      }();
      if (!out.ok())
        r = out.status();
      else
        r = std::optional<Element>(std::move(out).value());
    }
    if (r.ok()) {
      bytes = ElementBytes(**r);
      int64_t e = est_bytes_.load(std::memory_order_relaxed);
      while (bytes > e && !est_bytes_.compare_exchange_weak(e, bytes)) {
      }
    }
  }
  l.lock();
  --inflight_;
  if (!ended && r.ok()) size_known_ = true;
  if (ended) {
    if (account) ctx_->memory().Release(charged);
  } else {
    if (!account) {
      bytes = 0;
    } else if (bytes > charged) {
      // Larger than every earlier element: the one case that may pass the
      // budget (by the difference), as the element already exists.
      if (!ctx_->memory().TryCharge(bytes - charged)) ctx_->memory().Charge(bytes - charged);
    } else {
      ctx_->memory().Release(charged - bytes);
    }
    Slot slot{std::move(r), bytes};
    if (config_.deterministic)
      ordered_.emplace(seq, std::move(slot));
    else
      fifo_.push_back(std::move(slot));
    ++buffered_;
    counters()->buffer_depth.store(buffered_, std::memory_order_relaxed);
    counters()->buffered_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  cv_.notify_all();
}

NextResult AsyncMapIterator::GetNext() {
  std::unique_lock<std::mutex> l(mu_);
  int64_t waited_from = 0;
  for (;;) {
    std::optional<Slot> got;
    if (config_.deterministic) {
      auto it = ordered_.find(next_out_);
      if (it != ordered_.end()) {
        got = std::move(it->second);
        ordered_.erase(it);
        ++next_out_;
      }
    } else if (!fifo_.empty()) {
      got = std::move(fifo_.front());
      fifo_.pop_front();
    }
    if (got) {
      --buffered_;
      counters()->buffer_depth.store(buffered_, std::memory_order_relaxed);
      counters()->buffered_bytes.fetch_sub(got->charged, std::memory_order_relaxed);
      ctx_->memory().Release(got->charged);
      if (waited_from) counters()->wait_ns.fetch_add(NowNs() - waited_from);
      // Refill once the buffer is half empty, not after every element: a
      // launch wakes a thread, and each then fills several slots.
      if (2 * (buffered_ + inflight_) <= Capacity()) LaunchLocked();
      return std::move(got->result);
    }
    const bool ended = end_seq_ >= 0;
    if (ended && inflight_ == 0 &&
        (config_.deterministic ? next_out_ >= end_seq_ : buffered_ == 0)) {
      return std::optional<Element>();
    }
    if (ctx_->cancelled()) return Status::Cancelled("pipeline cancelled");
    // Is what we need being computed by someone else? Then wait for it.
    const bool someone_on_it = config_.deterministic ? next_out_ < next_in_ : inflight_ > 0;
    if (!someone_on_it && !ended) {
      RunOne(l, 0, /*account=*/false);  // help: compute it in this thread
      continue;
    }
    if (!waited_from) waited_from = NowNs();
    LaunchLocked();
    cv_.wait_for(l, kWaitSlice);
  }
}

void AsyncMapIterator::QuiesceLocked(std::unique_lock<std::mutex>& l) {
  paused_ = true;
  // Queued workers are abandoned; started ones see paused_ and exit.
  ++generation_;
  workers_ = running_bodies_;
  cv_.wait(l, [this] { return running_bodies_ == 0 && inflight_ == 0; });
  workers_ = 0;
}

void AsyncMapIterator::ReleaseAllLocked() {
  int64_t total = 0;
  for (auto& [seq, s] : ordered_) total += s.charged;
  for (auto& s : fifo_) total += s.charged;
  ctx_->memory().Release(total);
  counters()->buffered_bytes.fetch_sub(total, std::memory_order_relaxed);
  ordered_.clear();
  fifo_.clear();
  buffered_ = 0;
  counters()->buffer_depth.store(0, std::memory_order_relaxed);
}

int64_t AsyncMapIterator::position() const {
  std::lock_guard<std::mutex> l(mu_);
  return next_out_;
}

Status AsyncMapIterator::SeekTo(int64_t n) {
  std::unique_lock<std::mutex> l(mu_);
  QuiesceLocked(l);
  ReleaseAllLocked();
  Status s = input_->SeekTo(n);
  next_in_ = next_out_ = n;
  end_seq_ = -1;
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
  w.Bool(rewind);
  if (rewind) {
    // Only cursors: the input, moved back to the first unreturned element.
    w.I64(next_out_);
    s = input_->Save(w);
  } else {
    w.I64(next_in_);
    w.I64(next_out_);
    w.I64(end_seq_);
    w.U64(static_cast<uint64_t>(buffered_));
    auto put = [&](int64_t seq, const Slot& slot) {
      w.I64(seq);
      w.Bool(slot.result.ok());
      if (!slot.result.ok()) {
        w.Stat(slot.result.status());
      } else if (s.ok()) {
        s = w.Elem(**slot.result);
      }
    };
    for (auto& [seq, slot] : ordered_) put(seq, slot);
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
      end_seq_ = -1;
      return Status::OK();
    }
    SLUICE_ASSIGN_OR_RETURN(next_in_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(next_out_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(end_seq_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
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
      if (config_.deterministic && (seq < next_out_ || seq >= next_in_ || ordered_.count(seq))) {
        return Status::DataLoss("iterator state: stage '" + config_.name + "' element " +
                                std::to_string(seq) + " out of place");
      }
      if (!ctx_->memory().TryCharge(slot.charged)) {
        return Status::ResourceExhausted("restoring stage '" + config_.name +
                                         "': its buffered elements exceed the ram_budget " +
                                         std::to_string(ctx_->memory().limit()) + " bytes");
      }
      if (config_.deterministic)
        ordered_.emplace(seq, std::move(slot));
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
