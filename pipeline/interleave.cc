// interleave: fn maps each input element to a dataset; cycle_length of them
// are open at once and block_length elements are taken from each in turn
// (tf.data's interleave). When one ends, its slot is refilled in place from
// the next input element when the cycle comes back to it.
//
// Three pieces: InterleaveCycle (internal/interleave_cycle.h) says which slot
// comes next; InterleavePrefetcher (internal/interleave_prefetcher.h) holds
// the slots and, with parallelism > 1, reads ahead in them in tasks of the
// iterator's graph; InterleaveIterator, here, composes them: it opens the
// input's datasets into the slots, takes elements in the cycle's order, and
// saves and restores the whole.
//
// The consumer takes elements in the sequential order (deterministic) or
// from any slot with one ready; when nobody is reading the slot it needs, it
// reads it itself rather than wait. Empty slots are opened ahead, by the
// consumer, in the order the sequential algorithm would open them, so the
// output equals the sequential one.
#include <algorithm>
#include <mutex>
#include <optional>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/interleave_cycle.h"
#include "sluice/pipeline/internal/interleave_prefetcher.h"
#include "sluice/pipeline/internal/stages.h"
#include "sluice/pipeline/internal/state.h"
#include "sluice/pipeline/internal/sub_dataset.h"

namespace sluice::pipeline_internal {
namespace {

struct InterleaveConfig {
  int64_t cycle_length = 1;
  int64_t block_length = 1;
  int64_t parallelism = 1;            // 1: sequential, in the caller's thread
  bool autotune_parallelism = false;  // `parallelism` is the tuner's start
  bool deterministic = true;
};

// The prefetcher's settings for `c`.
InterleavePrefetcher::Config PrefetchConfig(const InterleaveConfig& c) {
  return {.capacity = std::clamp<int64_t>(c.block_length, 2, 64),
          .parallel = c.parallelism > 1 || c.autotune_parallelism,
          .parallelism = c.parallelism,
          .autotune_parallelism = c.autotune_parallelism};
}

// One consumer at a time (IteratorNode); the prefetcher's mutex guards the
// cycle and the slots, and is released around every read and open.
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
        parallel_(PrefetchConfig(config).parallel),
        cycle_(config.cycle_length, config.block_length),
        prefetcher_(ctx, counters(), node.name(), cycle_, PrefetchConfig(config)),
        mu_(prefetcher_.mu()) {}

  Status Save(StateWriter& w) override {
    std::unique_lock<std::mutex> l(mu_);
    prefetcher_.PauseLocked(l);
    Status s = SaveLocked(w);
    prefetcher_.ResumeLocked();
    return s;
  }

  Status Restore(StateReader& r) override {
    std::unique_lock<std::mutex> l(mu_);
    prefetcher_.PauseLocked(l);
    Status s = RestoreLocked(r);
    prefetcher_.ResumeLocked();
    return s;
  }

 protected:
  NextResult GetNext() override {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (ctx()->cancelled()) return Status::Cancelled("pipeline cancelled");
      if (parallel_) FillEmptySlotsLocked(l);
      if (cycle_.end_of_input() && !AnyOpenLocked()) return std::optional<Element>();
      InterleaveSlot& s = prefetcher_.slot(cycle_.current());
      if (!s.open_error.ok()) {
        Status e = std::move(s.open_error);
        s.open_error = Status::OK();
        return e;
      }
      if (!s.it) {
        if (cycle_.end_of_input()) {
          cycle_.NextSlot();
          continue;
        }
        Status st = OpenLocked(l, s);
        if (!st.ok()) return st;
        continue;
      }
      if (!s.buf.empty()) return TakeBufferedLocked(s, /*advance=*/true);
      if (s.ended) {
        CloseLocked(l, s);
        cycle_.NextSlot();
        continue;
      }
      if (s.pulling) {
        // A task is reading this slot: take another slot's element if order
        // does not matter, else wait for it.
        if (!config_.deterministic) {
          if (InterleaveSlot* o = prefetcher_.AnyBufferedLocked()) {
            return TakeBufferedLocked(*o, /*advance=*/false);
          }
        }
        prefetcher_.LaunchLocked();
        prefetcher_.WaitLocked(l);
        continue;
      }
      // Nobody is reading the slot we need: read it here.
      NextResult r = prefetcher_.ReadHereLocked(l, s);
      if (!r.ok()) return r;
      if (!r->has_value()) {
        s.ended = true;
        continue;
      }
      cycle_.TookElement();
      prefetcher_.LaunchLocked();
      return r;
    }
  }

 private:
  bool AnyOpenLocked() const {
    for (const InterleaveSlot& s : prefetcher_.slots()) {
      if (s.it || !s.open_error.ok()) return true;
    }
    return false;
  }

  // Takes the oldest buffered result of `s`, moves the cycle on past an
  // element if `advance`, and lets read-ahead refill the room it leaves.
  NextResult TakeBufferedLocked(InterleaveSlot& s, bool advance) {
    NextResult r = prefetcher_.TakeBufferedLocked(s);
    if (advance && r.ok()) cycle_.TookElement();
    prefetcher_.LaunchLocked();
    return r;
  }

  // Makes the sub-iterator of fn(e) into `s`.
  Status MakeSub(InterleaveSlot& s, Element e, int64_t index) {
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
  // the end of input. Releases mu_ meanwhile (only the consumer touches the
  // input and empty slots).
  Status OpenLocked(std::unique_lock<std::mutex>& l, InterleaveSlot& s) {
    l.unlock();
    InterleaveSlot fresh;
    Status st;
    bool ended = false;
    NextResult in = input_->Next();
    if (!in.ok()) {
      st = in.status();
    } else if (!in->has_value()) {
      ended = true;
    } else {
      st = MakeSub(fresh, std::move(**in), cycle_.next_input_index());
    }
    l.lock();
    if (ended) {
      cycle_.SetEndOfInput();
      return Status::OK();
    }
    if (in.ok()) cycle_.TookInput();
    if (!st.ok()) return st;
    s.ds = std::move(fresh.ds);
    s.it = std::move(fresh.it);
    s.producer = std::move(fresh.producer);
    s.index = fresh.index;
    s.ended = false;
    prefetcher_.LaunchLocked();
    return Status::OK();
  }

  // Parallel mode: opens every empty slot, in the order the sequential
  // algorithm visits them, keeping an error for when the cycle gets there.
  void FillEmptySlotsLocked(std::unique_lock<std::mutex>& l) {
    for (int64_t k = 0; k < cycle_.cycle_length() && !cycle_.end_of_input(); ++k) {
      InterleaveSlot& s = prefetcher_.slot(cycle_.Nth(k));
      if (!s.open_error.ok()) return;
      if (s.it) continue;
      Status st = OpenLocked(l, s);
      if (!st.ok()) {
        s.open_error = std::move(st);
        return;
      }
    }
  }

  void CloseLocked(std::unique_lock<std::mutex>& l, InterleaveSlot& s) {
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

  Status SaveLocked(StateWriter& w) {
    w.Tag("interleave");
    w.U64(params_.iteration);  // sub-datasets' iterations derive from it
    cycle_.Save(w);
    SLUICE_RETURN_IF_ERROR(input_->Save(w));
    for (size_t i = 0; i < static_cast<size_t>(cycle_.cycle_length()); ++i) {
      SLUICE_RETURN_IF_ERROR(SaveSlot(w, prefetcher_.slot(i)));
    }
    return Status::OK();
  }

  // A slot: its pending open error, its producer element, position, buffered
  // results and sub-iterator.
  Status SaveSlot(StateWriter& w, InterleaveSlot& s) {
    w.Stat(s.open_error);
    w.Bool(s.it != nullptr);
    if (!s.it) return Status::OK();
    SLUICE_RETURN_IF_ERROR(w.Elem(s.producer));
    w.I64(s.index);
    w.Bool(s.ended);
    SLUICE_RETURN_IF_ERROR(prefetcher_.SaveBuffer(w, s));
    return s.it->Save(w);
  }

  Status RestoreLocked(StateReader& r) {
    SLUICE_RETURN_IF_ERROR(r.Tag("interleave"));
    SLUICE_ASSIGN_OR_RETURN(params_.iteration, r.U64());
    for (size_t i = 0; i < static_cast<size_t>(cycle_.cycle_length()); ++i) {
      InterleaveSlot& s = prefetcher_.slot(i);
      prefetcher_.ReleaseBufferLocked(s);
      s.it.reset();
      s.ds.reset();
      s.open_error = Status::OK();
      s.ended = false;
    }
    SLUICE_RETURN_IF_ERROR(cycle_.Restore(r, node_.name()));
    SLUICE_RETURN_IF_ERROR(input_->Restore(r));
    for (size_t i = 0; i < static_cast<size_t>(cycle_.cycle_length()); ++i) {
      SLUICE_RETURN_IF_ERROR(RestoreSlot(r, prefetcher_.slot(i)));
    }
    return Status::OK();
  }

  // SaveSlot's inverse, into an emptied slot; its buffered results are
  // charged again.
  Status RestoreSlot(StateReader& r, InterleaveSlot& s) {
    SLUICE_RETURN_IF_ERROR(r.Stat(&s.open_error));
    SLUICE_ASSIGN_OR_RETURN(bool has, r.Bool());
    if (!has) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(Element e, r.Elem());
    SLUICE_ASSIGN_OR_RETURN(int64_t index, r.I64());
    SLUICE_ASSIGN_OR_RETURN(bool ended, r.Bool());
    SLUICE_RETURN_IF_ERROR(prefetcher_.RestoreBufferLocked(r, s));
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
  InterleaveCycle cycle_;  // read by the prefetcher's tasks: declared before it
  InterleavePrefetcher prefetcher_;
  std::mutex& mu_;  // the prefetcher's
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
    // The order follows cycle_length, so kAutotune is a constant; only the
    // threads (parallelism) follow the CPU budget.
    c.cycle_length = o_.cycle_length == kAutotune ? kAutotuneCycleLength : o_.cycle_length;
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
