// The pieces of interleave on their own: InterleaveCycle (which slot is
// next) and InterleavePrefetcher (the slots and the read-ahead in them).
// tests/pipeline/transform_stages_test.cc checks the stage they compose.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/interleave_cycle.h"
#include "sluice/pipeline/internal/interleave_prefetcher.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {
namespace {

// ---- InterleaveCycle --------------------------------------------------------

TEST(InterleaveCycleTest, TakesBlockLengthElementsFromEachSlotInTurn) {
  InterleaveCycle c(3, 2);
  std::vector<size_t> order;
  for (int i = 0; i < 8; ++i) {
    order.push_back(c.current());
    c.TookElement();
  }
  EXPECT_EQ(order, (std::vector<size_t>{0, 0, 1, 1, 2, 2, 0, 0}));
  EXPECT_EQ(c.current(), 1u);
  EXPECT_EQ(c.block_index(), 0);
}

TEST(InterleaveCycleTest, NextSlotStartsANewBlockAndWraps) {
  InterleaveCycle c(2, 3);
  c.TookElement();
  EXPECT_EQ(c.current(), 0u);
  EXPECT_EQ(c.block_index(), 1);
  c.NextSlot();  // slot 0 ended after one element of its block
  EXPECT_EQ(c.current(), 1u);
  EXPECT_EQ(c.block_index(), 0);
  c.TookElement();
  c.TookElement();
  c.NextSlot();
  EXPECT_EQ(c.current(), 0u);
  EXPECT_EQ(c.block_index(), 0);
}

TEST(InterleaveCycleTest, NthVisitsFromTheCurrentSlot) {
  InterleaveCycle c(4, 1);
  c.TookElement();
  c.TookElement();  // at slot 2
  std::vector<size_t> visit;
  for (int64_t k = 0; k < c.cycle_length(); ++k) visit.push_back(c.Nth(k));
  EXPECT_EQ(visit, (std::vector<size_t>{2, 3, 0, 1}));
}

// The sequential interleave algorithm over plain vectors, driven only by the
// cycle: what InterleaveIterator does with slots of sub-iterators.
std::vector<int64_t> DriveCycle(const std::vector<std::vector<int64_t>>& inputs,
                                int64_t cycle_length, int64_t block_length) {
  InterleaveCycle c(cycle_length, block_length);
  std::vector<std::optional<std::deque<int64_t>>> slots(static_cast<size_t>(cycle_length));
  std::vector<int64_t> out;
  auto any_open = [&] {
    for (const auto& s : slots) {
      if (s) return true;
    }
    return false;
  };
  while (!(c.end_of_input() && !any_open())) {
    auto& s = slots[c.current()];
    if (!s) {
      if (c.end_of_input()) {
        c.NextSlot();
      } else if (c.next_input_index() == static_cast<int64_t>(inputs.size())) {
        c.SetEndOfInput();
      } else {
        const auto& v = inputs[static_cast<size_t>(c.next_input_index())];
        s.emplace(v.begin(), v.end());
        c.TookInput();
      }
      continue;
    }
    if (s->empty()) {  // ended: close, move on
      s.reset();
      c.NextSlot();
      continue;
    }
    out.push_back(s->front());
    s->pop_front();
    c.TookElement();
  }
  return out;
}

TEST(InterleaveCycleTest, GivesTfDataOrderWithInputsEndingAtAnyPoint) {
  // tf.data's documented example: range(1, 6), each x repeated 6 times,
  // cycle_length 2, block_length 4.
  std::vector<std::vector<int64_t>> docs;
  for (int64_t x = 1; x < 6; ++x) docs.push_back(std::vector<int64_t>(6, x));
  EXPECT_EQ(DriveCycle(docs, 2, 4),
            (std::vector<int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                                  3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}));
  // Inputs of 1..4 elements ending mid-block (InterleaveTest.Conformance's
  // "interleave exact" case), and one with empty inputs.
  std::vector<std::vector<int64_t>> uneven;
  for (int64_t x = 0; x < 7; ++x) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < x % 4 + 1; ++i) v.push_back(x * 100 + i);
    uneven.push_back(v);
  }
  EXPECT_EQ(DriveCycle(uneven, 3, 2),
            (std::vector<int64_t>{0, 100, 101, 200, 201, 300, 301, 202, 302, 303, 400, 500, 501,
                                  600, 601, 602}));
  EXPECT_EQ(DriveCycle({{}, {1, 2, 3}, {}, {10, 11, 12}, {4}, {}, {20}}, 2, 2),
            (std::vector<int64_t>{1, 2, 3, 10, 11, 4, 12, 20}));
}

TEST(InterleaveCycleTest, SavesAndRestoresItsPosition) {
  InterleaveCycle c(3, 2);
  c.TookElement();
  c.TookElement();
  c.TookElement();  // slot 1, one taken
  c.TookInput();
  c.TookInput();
  c.SetEndOfInput();
  StateWriter w;
  c.Save(w);
  InterleaveCycle d(3, 2);
  StateReader r(w.data());
  ASSERT_TRUE(d.Restore(r, "files").ok());
  EXPECT_TRUE(r.done());
  EXPECT_EQ(d.current(), 1u);
  EXPECT_EQ(d.block_index(), 1);
  EXPECT_EQ(d.next_input_index(), 2);
  EXPECT_TRUE(d.end_of_input());
}

TEST(InterleaveCycleTest, RejectsAPositionOutsideTheCycleAndKeepsItsOwn) {
  for (auto [cycle_index, block_index] : {std::pair<int64_t, int64_t>{3, 0}, {-1, 0}, {0, 2}}) {
    StateWriter w;
    w.I64(cycle_index);
    w.I64(block_index);
    w.Bool(false);
    w.I64(5);
    InterleaveCycle c(3, 2);
    c.TookElement();
    StateReader r(w.data());
    const Status s = c.Restore(r, "files");
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("stage 'files'"), std::string::npos) << s.ToString();
    EXPECT_EQ(c.current(), 0u);
    EXPECT_EQ(c.block_index(), 1);
    EXPECT_EQ(c.next_input_index(), 0);
  }
}

// ---- InterleavePrefetcher ---------------------------------------------------

Element Int(int64_t v) { return Element({Tensor::Scalar<int64_t>(v)}); }
int64_t Value(const NextResult& r) { return (**r)[0].scalar<int64_t>(); }
constexpr int64_t kIntBytes = 8;  // ElementBytes of Int(v)

// A sub-iterator over a list of values, each read taking `delay`; counts
// the calls inside Next().
class ListIterator : public IteratorNode {
 public:
  ListIterator(IteratorContext* ctx, StageCounters* c, std::vector<int64_t> values,
               std::chrono::milliseconds delay = {}, std::atomic<int>* inside = nullptr)
      : IteratorNode(ctx, c), values_(std::move(values)), delay_(delay), inside_(inside) {}
  Status Save(StateWriter& w) override {
    w.U64(pos_);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(pos_, r.U64());
    return Status::OK();
  }

 protected:
  NextResult GetNext() override {
    if (inside_) ++*inside_;
    std::this_thread::sleep_for(delay_);
    NextResult r = std::optional<Element>();
    if (pos_ < values_.size()) r = std::optional<Element>(Int(values_[pos_++]));
    if (inside_) --*inside_;
    return r;
  }

 private:
  std::vector<int64_t> values_;
  size_t pos_ = 0;
  const std::chrono::milliseconds delay_;
  std::atomic<int>* const inside_;
};

std::vector<int64_t> Buffered(const InterleaveSlot& s) {
  std::vector<int64_t> v;
  for (const InterleaveBuffered& b : s.buf) v.push_back(Value(b.result));
  return v;
}

// Lets read-ahead run (relaunching) until done() holds; false after 10 s.
template <typename F>
bool RunUntil(InterleavePrefetcher& p, std::unique_lock<std::mutex>& l, F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    p.LaunchLocked();
    p.WaitLocked(l);
  }
  return true;
}

struct Rig {
  explicit Rig(Options o = {.cpu_budget = 2, .autotune = false}) : ctx(o) {}
  std::unique_ptr<IteratorNode> List(std::vector<int64_t> v, std::chrono::milliseconds delay = {},
                                     std::atomic<int>* inside = nullptr) {
    return std::make_unique<ListIterator>(&ctx, &sub_counters, std::move(v), delay, inside);
  }
  IteratorContext ctx;
  StageCounters counters, sub_counters;
};

TEST(InterleavePrefetcherTest, ReadsAheadOnlyAfterAnElementIsMeasuredThenFillsEachSlot) {
  Rig rig;
  InterleaveCycle cycle(2, 1);
  InterleavePrefetcher p(rig.ctx, &rig.counters, "files", cycle,
                         {.capacity = 3, .parallel = true, .parallelism = 2});
  EXPECT_EQ(rig.counters.buffer_capacity.load(), 6);
  std::unique_lock<std::mutex> l(p.mu());
  p.slot(0).it = rig.List({0, 1, 2});
  p.slot(1).it = rig.List({10, 11, 12, 13, 14, 15});
  for (int i = 0; i < 25; ++i) {  // ~50 ms: no task may start yet
    p.LaunchLocked();
    p.WaitLocked(l);
  }
  EXPECT_TRUE(p.slot(0).buf.empty());
  EXPECT_TRUE(p.slot(1).buf.empty());

  NextResult first = p.ReadHereLocked(l, p.slot(0));
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ(Value(first), 0);
  ASSERT_TRUE(RunUntil(p, l, [&] { return p.slot(0).ended && p.slot(1).buf.size() == 3; }));
  EXPECT_EQ(Buffered(p.slot(0)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Buffered(p.slot(1)), (std::vector<int64_t>{10, 11, 12}));  // capacity
  EXPECT_EQ(rig.counters.buffer_depth.load(), 5);
  // Five buffered and one reserved for the consumer's own read.
  EXPECT_EQ(rig.ctx.memory().used(), 6 * kIntBytes);

  EXPECT_EQ(Value(p.TakeBufferedLocked(p.slot(1))), 10);
  ASSERT_TRUE(RunUntil(p, l, [&] { return p.slot(1).buf.size() == 3; }));
  EXPECT_EQ(Buffered(p.slot(1)), (std::vector<int64_t>{11, 12, 13}));
  EXPECT_EQ(p.AnyBufferedLocked(), &p.slot(0));
}

TEST(InterleavePrefetcherTest, ReadsAheadOnlyWhatFitsTheRamBudgetNearestSlotFirst) {
  // Room for three elements: one reserved for the consumer, two read ahead,
  // by the one task (parallelism 1), in the cycle's current slot.
  Rig rig({.cpu_budget = 2, .ram_budget = 3 * kIntBytes, .autotune = false});
  InterleaveCycle cycle(3, 1);
  InterleavePrefetcher p(rig.ctx, &rig.counters, "files", cycle,
                         {.capacity = 4, .parallel = true, .parallelism = 1});
  std::unique_lock<std::mutex> l(p.mu());
  for (size_t i = 0; i < 3; ++i) p.slot(i).it = rig.List({1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(p.ReadHereLocked(l, p.slot(0)).ok());
  auto total = [&] {
    size_t n = 0;
    for (const InterleaveSlot& s : p.slots()) n += s.buf.size();
    return n;
  };
  ASSERT_TRUE(RunUntil(p, l, [&] { return total() == 2; }));
  for (int i = 0; i < 25; ++i) {  // ~50 ms more: nothing else fits
    p.LaunchLocked();
    p.WaitLocked(l);
  }
  EXPECT_EQ(total(), 2u);
  EXPECT_EQ(rig.ctx.memory().used(), 3 * kIntBytes);
  EXPECT_EQ(p.slot(0).buf.size(), 2u);
}

TEST(InterleavePrefetcherTest, SavesAndRestoresBuffersChargingThemAgain) {
  Rig rig;
  InterleaveCycle cycle(1, 1);
  StateWriter w;
  w.U64(2);
  w.Bool(true);
  ASSERT_TRUE(w.Elem(Int(7)).ok());
  w.Bool(false);
  w.Stat(Status::NotFound("shard 3"));
  {
    InterleavePrefetcher p(rig.ctx, &rig.counters, "files", cycle, {.capacity = 2});
    std::unique_lock<std::mutex> l(p.mu());
    StateReader r(w.data());
    ASSERT_TRUE(p.RestoreBufferLocked(r, p.slot(0)).ok());
    EXPECT_TRUE(r.done());
    ASSERT_EQ(p.slot(0).buf.size(), 2u);
    EXPECT_EQ(rig.ctx.memory().used(), kIntBytes);  // the error is not charged
    EXPECT_EQ(rig.counters.buffer_depth.load(), 1);
    StateWriter again;
    ASSERT_TRUE(p.SaveBuffer(again, p.slot(0)).ok());
    EXPECT_EQ(again.data(), w.data());
    EXPECT_EQ(Value(p.TakeBufferedLocked(p.slot(0))), 7);
    EXPECT_EQ(p.TakeBufferedLocked(p.slot(0)).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(rig.ctx.memory().used(), 0);
    EXPECT_EQ(rig.counters.buffer_depth.load(), 0);

    StateWriter big;
    big.U64(3);  // more than the capacity
    StateReader rb(big.data());
    const Status s = p.RestoreBufferLocked(rb, p.slot(0));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("stage 'files'"), std::string::npos) << s.ToString();
  }
}

TEST(InterleavePrefetcherTest, DestructionWaitsForRunningReadsAndReleasesEverything) {
  Rig rig;
  std::atomic<int> inside{0};
  InterleaveCycle cycle(2, 1);
  {
    InterleavePrefetcher p(rig.ctx, &rig.counters, "files", cycle,
                           {.capacity = 8, .parallel = true, .parallelism = 2});
    std::unique_lock<std::mutex> l(p.mu());
    for (size_t i = 0; i < 2; ++i) {
      p.slot(i).it = rig.List(std::vector<int64_t>(100, 1), std::chrono::milliseconds(5), &inside);
    }
    ASSERT_TRUE(p.ReadHereLocked(l, p.slot(0)).ok());
    ASSERT_TRUE(RunUntil(p, l, [&] { return p.slot(0).pulling && p.slot(1).pulling; }));
  }
  EXPECT_EQ(inside.load(), 0);
  EXPECT_EQ(rig.ctx.memory().used(), 0);
  EXPECT_EQ(rig.ctx.memory().required(), 0);
  EXPECT_EQ(rig.counters.buffer_depth.load(), 0);
}

}  // namespace
}  // namespace sluice::pipeline_internal
