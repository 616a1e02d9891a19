// interleave: fn maps each input element to a dataset; cycle_length of them
// are open at once and block_length elements are taken from each in turn
// (tf.data's interleave). When one ends, its slot is refilled in place from
// the next input element when the cycle comes back to it.
//
// With parallelism > 1 every open dataset's iterator is read ahead by tasks
// of the iterator's graph into a small per-slot buffer (a task never blocks:
// it leaves when no slot needs reading, the RAM budget is reached or the
// iterator is paused; a task whose slot the consumer took reads another).
// The consumer takes elements in the sequential order (deterministic) or
// from any slot with one ready; when nobody is reading the slot it needs, it
// reads it itself rather than wait. Empty slots are opened ahead, by the
// consumer, in the order the sequential algorithm would open them, so the
// output equals the sequential one.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/pipeline/internal/sub_dataset.h"

namespace sluice::pipeline_internal {
namespace {

constexpr auto kWaitSlice = std::chrono::milliseconds(2);

struct InterleaveConfig {
  int64_t cycle_length = 1;
  int64_t block_length = 1;
  int64_t parallelism = 1;            // 1: sequential, in the caller's thread
  bool autotune_parallelism = false;  // `parallelism` is the tuner's start
  bool deterministic = true;
};

class InterleaveIterator : public IteratorNode {
 public:
  InterleaveIterator(IteratorContext& ctx, const DatasetNode& node, const IteratorParams& params,
                     std::unique_ptr<IteratorNode> input, const DatasetFn& fn,
                     InterleaveConfig config)
      : IteratorNode(&ctx, ctx.CountersFor(&node)),
        node_(node),
        params_(params),
        input_(std::move(input)),
        fn_(fn),
        config_(config),
        parallel_(config.parallelism > 1 || config.autotune_parallelism),
        capacity_(std::clamp<int64_t>(config.block_length, 2, 64)),
        slots_(static_cast<size_t>(config.cycle_length)) {
    counters()->parallelism.store(config_.parallelism, std::memory_order_relaxed);
    if (config_.autotune_parallelism) {
      // No more tasks than open datasets; waiting reads may pass the CPU
      // budget (the tuner watches their CPU share).
      parallelism_tunable_ = ctx.AddTunable(
          counters(), "parallelism", config_.parallelism, 1,
          std::max<int64_t>(1, std::min<int64_t>(config_.cycle_length, ctx.max_threads())), 0,
          [this] {
            std::lock_guard<std::mutex> l(mu_);
            LaunchLocked();
          });
    }
    if (parallel_) {
      counters()->buffer_capacity.store(capacity_ * config_.cycle_length,
                                        std::memory_order_relaxed);
    }
  }

  ~InterleaveIterator() override {
    std::unique_lock<std::mutex> l(mu_);
    stopping_ = true;
    shared_->stopping = true;
    // Tasks queued but not started will see `stopping` and not touch this.
    CpuIdle idle(ctx()->cpu());
    cv_.wait(l, [this] { return shared_->running == 0; });
    for (Slot& s : slots_) ReleaseBufferLocked(s);
    ctx()->memory().ReleaseRequired(consumer_reserved_);
    consumer_reserved_ = 0;
    l.unlock();
    for (Slot& s : slots_) {
      s.it.reset();
      s.ds.reset();
    }
    if (parallelism_tunable_) ctx()->RemoveTunable(parallelism_tunable_);
  }

  int64_t Parallelism() const {
    return parallelism_tunable_ ? parallelism_tunable_->value.load(std::memory_order_relaxed)
                                : config_.parallelism;
  }

  Status Save(StateWriter& w) override {
    std::unique_lock<std::mutex> l(mu_);
    paused_ = true;
    CpuIdle idle(ctx()->cpu());
    cv_.wait(l, [this] { return shared_->running == 0; });
    Status s = SaveLocked(w);
    paused_ = false;
    LaunchLocked();
    return s;
  }

  Status Restore(StateReader& r) override {
    std::unique_lock<std::mutex> l(mu_);
    paused_ = true;
    CpuIdle idle(ctx()->cpu());
    cv_.wait(l, [this] { return shared_->running == 0; });
    Status s = RestoreLocked(r);
    paused_ = false;
    LaunchLocked();
    return s;
  }

 protected:
  NextResult GetNext() override {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      if (parallel_) FillEmptySlotsLocked(l);
      if (end_of_input_ && !AnyOpenLocked()) return std::optional<Element>();
      Slot& s = slots_[static_cast<size_t>(cycle_index_)];
      if (!s.open_error.ok()) {
        Status e = std::move(s.open_error);
        s.open_error = Status::OK();
        return e;
      }
      if (!s.it) {
        if (end_of_input_) {
          AdvanceToNextInCycle();
          continue;
        }
        Status st = OpenLocked(l, s);
        if (!st.ok()) return st;
        continue;
      }
      if (!s.buf.empty()) return TakeBufferedLocked(s, /*advance=*/true);
      if (s.ended) {
        CloseLocked(l, s);
        AdvanceToNextInCycle();
        continue;
      }
      if (s.pulling) {
        // A task is reading this slot: take another slot's element if order
        // does not matter, else wait for it.
        if (!config_.deterministic) {
          for (Slot& o : slots_) {
            if (!o.buf.empty()) return TakeBufferedLocked(o, /*advance=*/false);
          }
        }
        LaunchLocked();
        CpuIdle idle(ctx()->cpu());
        cv_.wait_for(l, kWaitSlice);
        continue;
      }
      // Nobody is reading the slot we need: read it here.
      NextResult r = ReadHereLocked(l, s);
      if (!r.ok()) return r;
      if (!r->has_value()) {
        s.ended = true;
        continue;
      }
      Advance();
      LaunchLocked();
      return r;
    }
  }

 private:
  struct Buffered {
    NextResult result = std::optional<Element>();
    int64_t charged = 0;
  };
  struct Slot {
    std::optional<SubDataset> ds;  // outlives `it`
    std::unique_ptr<IteratorNode> it;
    Element producer;    // the input element fn made `ds` from
    int64_t index = -1;  // its index in the input
    std::deque<Buffered> buf;
    bool ended = false;    // `it` returned the end (after what is in buf)
    bool pulling = false;  // someone is in it->Next()
    bool queued = false;   // a task for this slot is submitted and not finished
    Status open_error;     // an error met opening this slot ahead, not yet returned
  };

  void Advance() {
    if (++block_index_ >= config_.block_length) AdvanceToNextInCycle();
  }
  void AdvanceToNextInCycle() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % config_.cycle_length;
  }
  bool AnyOpenLocked() const {
    for (const Slot& s : slots_) {
      if (s.it || !s.open_error.ok()) return true;
    }
    return false;
  }

  // Makes the sub-iterator of fn(e) into `s`.
  Status MakeSub(Slot& s, Element e, int64_t index) {
    const int64_t t0 = NowNs();
    Result<SubIterator> sub = OpenSubDataset(fn_, e, index, *ctx(), params_, node_);
    counters()->busy_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed);
    if (!sub.ok()) return sub.status();
    s.ds = std::move(sub->dataset);
    s.it = std::move(sub->it);
    s.producer = std::move(e);
    s.index = index;
    s.ended = false;
    return Status::OK();
  }

  // Opens the next input element's dataset into the empty slot `s`, or sets
  // end_of_input_. Releases mu_ meanwhile (only the consumer touches the
  // input and empty slots).
  Status OpenLocked(std::unique_lock<std::mutex>& l, Slot& s) {
    l.unlock();
    Slot fresh;
    Status st;
    bool ended = false;
    NextResult in = input_->Next();
    if (!in.ok()) {
      st = in.status();
    } else if (!in->has_value()) {
      ended = true;
    } else {
      st = MakeSub(fresh, std::move(**in), next_index_);
    }
    l.lock();
    if (ended) {
      end_of_input_ = true;
      return Status::OK();
    }
    if (in.ok()) ++next_index_;
    if (!st.ok()) return st;
    s.ds = std::move(fresh.ds);
    s.it = std::move(fresh.it);
    s.producer = std::move(fresh.producer);
    s.index = fresh.index;
    s.ended = false;
    LaunchLocked();
    return Status::OK();
  }

  // Parallel mode: opens every empty slot, in the order the sequential
  // algorithm visits them, keeping an error for when the cycle gets there.
  void FillEmptySlotsLocked(std::unique_lock<std::mutex>& l) {
    for (int64_t k = 0; k < config_.cycle_length && !end_of_input_; ++k) {
      Slot& s = slots_[static_cast<size_t>((cycle_index_ + k) % config_.cycle_length)];
      if (!s.open_error.ok()) return;
      if (s.it) continue;
      Status st = OpenLocked(l, s);
      if (!st.ok()) {
        s.open_error = std::move(st);
        return;
      }
    }
  }

  void CloseLocked(std::unique_lock<std::mutex>& l, Slot& s) {
    std::unique_ptr<IteratorNode> it = std::move(s.it);
    std::optional<SubDataset> ds = std::move(s.ds);
    s.ds.reset();
    s.producer = Element();
    s.index = -1;
    s.ended = false;
    l.unlock();
    it.reset();
    ds.reset();
    l.lock();
  }

  // Takes the oldest buffered result of `s` (releasing its charge), moves
  // the cycle on past an element if `advance`, and lets read-ahead refill
  // the room it leaves.
  NextResult TakeBufferedLocked(Slot& s, bool advance) {
    Buffered b = std::move(s.buf.front());
    s.buf.pop_front();
    ReleaseLocked(b.charged);
    if (advance && b.result.ok()) Advance();
    LaunchLocked();
    return std::move(b.result);
  }

  // The consumer reads the slot it needs itself (nobody else is): releases
  // mu_ for the read, holding the stage's CPU share, and measures the
  // result. REQUIRES: l holds mu_ (held again on return).
  NextResult ReadHereLocked(std::unique_lock<std::mutex>& l, Slot& s) {
    s.pulling = true;
    IteratorNode* it = s.it.get();
    l.unlock();
    NextResult r = ReadWithCpu(*it, /*timed=*/false);
    MeasureLocked(l, r);
    s.pulling = false;
    cv_.notify_all();
    return r;
  }

  // it.Next() holding the stage's CPU share (taken before the timer starts;
  // not used after cancellation when `timed`, a read-ahead). mu_ not held.
  NextResult ReadWithCpu(IteratorNode& it, bool timed) {
    CpuUse use(ctx()->cpu(), counters()->cpu_permille.load(std::memory_order_relaxed));
    if (!timed) return it.Next();
    if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
    CallTimer timer(counters());
    return it.Next();
  }

  // Re-locks `l` (released for a read of `r`), then measures what was read:
  // the estimate grows, room stays reserved for the consumer's element, and
  // an element larger than the whole budget becomes a ResourceExhausted
  // error. Returns its bytes (0 for an error or the end).
  int64_t MeasureLocked(std::unique_lock<std::mutex>& l, NextResult& r) {
    int64_t bytes = r.ok() && r->has_value() ? ElementBytes(**r) : 0;
    const int64_t limit = ctx()->memory().limit();
    if (bytes > limit) {
      r = TooBigForBudget(node_.name(), "an element read from sub-dataset", bytes, limit);
      bytes = 0;
    }
    l.lock();
    if (bytes > 0 || (r.ok() && r->has_value())) size_known_ = true;
    est_bytes_ = std::max(est_bytes_, bytes);
    if (est_bytes_ > consumer_reserved_) {
      ctx()->memory().ChargeRequired(est_bytes_ - consumer_reserved_);
      consumer_reserved_ = est_bytes_;
    }
    return bytes;
  }

  void ReleaseLocked(int64_t charged) {
    if (charged == 0) return;
    ctx()->memory().Release(charged);
    counters()->buffered_bytes.fetch_sub(charged, std::memory_order_relaxed);
    counters()->buffer_depth.fetch_sub(1, std::memory_order_relaxed);
  }
  void ReleaseBufferLocked(Slot& s) {
    for (Buffered& b : s.buf) ReleaseLocked(b.charged);
    s.buf.clear();
  }

  // Starts tasks reading ahead, nearest slots in the cycle first.
  void LaunchLocked() {
    if (!parallel_ || !size_known_ || stopping_ || paused_ || ctx()->cancelled()) return;
    const int64_t parallelism = Parallelism();
    counters()->parallelism.store(parallelism, std::memory_order_relaxed);
    for (int64_t k = 0; k < config_.cycle_length && tasks_ < parallelism; ++k) {
      const size_t i = static_cast<size_t>((cycle_index_ + k) % config_.cycle_length);
      Slot& s = slots_[i];
      if (!Readable(s) || s.queued) continue;
      s.queued = true;
      ++tasks_;
      ctx()->Submit([sh = shared_, this, i] {
        std::unique_lock<std::mutex> l(sh->mu);
        if (sh->stopping) return;  // the iterator is gone or going
        ++sh->running;
        TaskBody(l, i);
        --sh->running;
        sh->cv.notify_all();
      });
    }
  }

  // A slot a task may read ahead in: open, not ended, not being read, room
  // in its buffer.
  bool Readable(const Slot& s) const {
    return s.it && !s.ended && !s.pulling && static_cast<int64_t>(s.buf.size()) < capacity_;
  }

  // Reads ahead in slot i while there is room; when the slot cannot be read
  // (the consumer got to it first, it is full or ended), goes on with the
  // nearest readable slot no task has, so that a task launched for the slot
  // the consumer then read itself is not wasted. REQUIRES: l holds mu_.
  void TaskBody(std::unique_lock<std::mutex>& l, size_t i) {
    for (;;) {
      if (stopping_ || paused_ || ctx()->cancelled()) break;
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

  // The readable slot nearest in the cycle that no task has. REQUIRES: mu_.
  std::optional<size_t> UnclaimedReadableSlotLocked() const {
    for (int64_t k = 0; k < config_.cycle_length; ++k) {
      const size_t j = static_cast<size_t>((cycle_index_ + k) % config_.cycle_length);
      if (Readable(slots_[j]) && !slots_[j].queued) return j;
    }
    return std::nullopt;
  }

  // Reads one element ahead into the readable slot `s`, charged to the RAM
  // budget; false (nothing read) if it does not fit. REQUIRES: l holds mu_
  // (released for the read).
  bool ReadAheadLocked(std::unique_lock<std::mutex>& l, Slot& s) {
    const int64_t est = est_bytes_;
    // Until an element has been measured only the consumer reads (what it
    // reads is handed over, not buffered); then every read ahead must fit, a
    // slot's first as much as the others.
    if (!size_known_ || !ctx()->memory().TryCharge(est)) return false;
    s.pulling = true;
    IteratorNode* it = s.it.get();
    l.unlock();
    NextResult r = ReadWithCpu(*it, /*timed=*/true);
    const int64_t bytes = MeasureLocked(l, r);
    s.pulling = false;
    if (r.ok() && !r->has_value()) {
      ctx()->memory().Release(est);
      s.ended = true;
    } else {
      // Larger than every earlier element: it exists already, so it is
      // charged past the limit, and no read ahead starts until the total is
      // back under it.
      if (bytes > est)
        ctx()->memory().Charge(bytes - est);
      else
        ctx()->memory().Release(est - bytes);
      // Errors are buffered uncharged (charged == 0 also skips the counters).
      s.buf.push_back(Buffered{std::move(r), bytes});
      if (bytes) {
        counters()->buffered_bytes.fetch_add(bytes, std::memory_order_relaxed);
        counters()->buffer_depth.fetch_add(1, std::memory_order_relaxed);
      }
    }
    cv_.notify_all();
    return true;
  }

  Status SaveLocked(StateWriter& w) {
    w.Tag("interleave");
    w.U64(params_.iteration);  // sub-datasets' iterations derive from it
    w.I64(cycle_index_);
    w.I64(block_index_);
    w.Bool(end_of_input_);
    w.I64(next_index_);
    SLUICE_RETURN_IF_ERROR(input_->Save(w));
    for (Slot& s : slots_) SLUICE_RETURN_IF_ERROR(SaveSlot(w, s));
    return Status::OK();
  }

  // A slot: its pending open error, its producer element, position, buffered
  // results and sub-iterator.
  Status SaveSlot(StateWriter& w, Slot& s) {
    w.Stat(s.open_error);
    w.Bool(s.it != nullptr);
    if (!s.it) return Status::OK();
    SLUICE_RETURN_IF_ERROR(w.Elem(s.producer));
    w.I64(s.index);
    w.Bool(s.ended);
    w.U64(s.buf.size());
    for (const Buffered& b : s.buf) {
      w.Bool(b.result.ok());
      if (b.result.ok())
        SLUICE_RETURN_IF_ERROR(w.Elem(**b.result));
      else
        w.Stat(b.result.status());
    }
    return s.it->Save(w);
  }

  Status RestoreLocked(StateReader& r) {
    SLUICE_RETURN_IF_ERROR(r.Tag("interleave"));
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    for (Slot& s : slots_) {
      ReleaseBufferLocked(s);
      s.it.reset();
      s.ds.reset();
      s.open_error = Status::OK();
      s.ended = false;
    }
    SLUICE_ASSIGN_OR_RETURN(cycle_index_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(block_index_, r.I64());
    SLUICE_ASSIGN_OR_RETURN(end_of_input_, r.Bool());
    SLUICE_ASSIGN_OR_RETURN(next_index_, r.I64());
    if (cycle_index_ < 0 || cycle_index_ >= config_.cycle_length || block_index_ < 0 ||
        block_index_ >= config_.block_length) {
      return Status::DataLoss("iterator state: stage '" + node_.name() +
                              "' has a cycle position outside its cycle_length/block_length");
    }
    SLUICE_RETURN_IF_ERROR(input_->Restore(r));
    for (Slot& s : slots_) SLUICE_RETURN_IF_ERROR(RestoreSlot(r, s));
    return Status::OK();
  }

  // SaveSlot's inverse, into an emptied slot; its buffered results are
  // charged again.
  Status RestoreSlot(StateReader& r, Slot& s) {
    SLUICE_RETURN_IF_ERROR(r.Stat(&s.open_error));
    SLUICE_ASSIGN_OR_RETURN(bool has, r.Bool());
    if (!has) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
    SLUICE_ASSIGN_OR_RETURN(int64_t index, r.I64());
    SLUICE_ASSIGN_OR_RETURN(bool ended, r.Bool());
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, r.U64());
    if (n > static_cast<uint64_t>(capacity_)) {
      return Status::DataLoss("iterator state: stage '" + node_.name() +
                              "' has an oversized slot buffer");
    }
    for (uint64_t k = 0; k < n; ++k) {
      SLUICE_ASSIGN_OR_RETURN(bool ok, r.Bool());
      Buffered b;
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
        ctx()->memory().Charge(b.charged);
        counters()->buffered_bytes.fetch_add(b.charged, std::memory_order_relaxed);
        counters()->buffer_depth.fetch_add(1, std::memory_order_relaxed);
      }
      s.buf.push_back(std::move(b));
    }
    SLUICE_RETURN_IF_ERROR(MakeSub(s, std::move(e), index));
    s.ended = ended;
    return s.it->Restore(r);
  }

  const DatasetNode& node_;
  IteratorParams params_;                // iteration restored from saved state
  std::unique_ptr<IteratorNode> input_;  // touched by the consumer only
  const DatasetFn& fn_;
  const InterleaveConfig config_;
  const bool parallel_;
  Tunable* parallelism_tunable_ = nullptr;  // set when parallelism is kAutotune
  const int64_t capacity_;                  // elements buffered per slot (parallel)

  // What tasks share with the iterator; they hold it, so a task that starts
  // after the iterator is destroyed finds `stopping` set and leaves.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    int64_t running = 0;  // tasks inside TaskBody
  };
  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::mutex& mu_ = shared_->mu;
  std::condition_variable& cv_ = shared_->cv;
  std::vector<Slot> slots_;  // cycle_length of them, never resized
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;  // elements taken from the current slot's block
  bool end_of_input_ = false;
  int64_t next_index_ = 0;  // index of the next input element
  bool stopping_ = false;
  bool paused_ = false;
  int64_t tasks_ = 0;  // tasks submitted and not finished (while the iterator lives)
  int64_t est_bytes_ = 0;
  bool size_known_ = false;        // an element was read (and measured)
  int64_t consumer_reserved_ = 0;  // charged for the consumer's element (MeasureLocked)
};

class InterleaveNode : public DatasetNode {
 public:
  InterleaveNode(const Dataset& input, DatasetFn fn, InterleaveOptions o)
      : DatasetNode("interleave", o.name, {input.node()}, ElementSpec::Unknown(),
                    input.cardinality() == 0 ? 0 : kUnknownCardinality),
        fn_(std::move(fn)),
        o_(std::move(o)) {}
  std::string Describe() const override {
    auto n = [](int64_t v) { return v == kAutotune ? std::string("autotune") : std::to_string(v); };
    return name() + "(cycle_length=" + n(o_.cycle_length) +
           ", block_length=" + std::to_string(o_.block_length) +
           (o_.parallelism == 1 ? std::string() : ", parallelism=" + n(o_.parallelism)) + ")";
  }
  Result<std::unique_ptr<IteratorNode>> MakeIterator(IteratorContext& ctx,
                                                     const IteratorParams& params) const override {
    SLUICE_ASSIGN_OR_RETURN(auto input, MakeIteratorOf(*inputs()[0], ctx, params));
    InterleaveConfig c;
    c.cycle_length = o_.cycle_length == kAutotune ? std::max(1, ctx.cpu_budget()) : o_.cycle_length;
    c.block_length = o_.block_length;
    c.autotune_parallelism = o_.parallelism == kAutotune;
    c.parallelism = c.autotune_parallelism
                        ? std::min<int64_t>(c.cycle_length, std::max(1, ctx.cpu_budget()))
                        : o_.parallelism;
    c.deterministic = o_.deterministic.value_or(ctx.deterministic());
    return std::unique_ptr<IteratorNode>(
        std::make_unique<InterleaveIterator>(ctx, *this, params, std::move(input), fn_, c));
  }

 private:
  DatasetFn fn_;
  InterleaveOptions o_;
};

}  // namespace

Dataset MakeInterleave(const Dataset& input, DatasetFn fn, InterleaveOptions options) {
  if (!fn) return Dataset::FromError(Status::InvalidArgument("interleave: the function is empty"));
  auto bad = [](int64_t v) { return v < 1 && v != kAutotune; };
  if (bad(options.cycle_length) || bad(options.parallelism) || options.block_length < 1) {
    return Dataset::FromError(Status::InvalidArgument(
        "interleave: cycle_length and parallelism must be >= 1 or kAutotune and block_length "
        ">= 1, got cycle_length " +
        std::to_string(options.cycle_length) + ", block_length " +
        std::to_string(options.block_length) + ", parallelism " +
        std::to_string(options.parallelism)));
  }
  return Dataset(std::make_shared<InterleaveNode>(input, std::move(fn), std::move(options)));
}

}  // namespace sluice::pipeline_internal
