// Destroying an iterator returns within 100 ms even while calls of a map
// function are slow to return, wherever that map sits (issue 24 item 4); the
// pipeline is freed once the calls return, and nothing is touched after.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "sanitizer_slowdown.h"
#include "slow_calls.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/reaper.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::MillisecondsOf;
using testing::SlowCalls;

constexpr double kLimitMs = 100 * testing::kSanitizerSlowdown;

// A map whose calls for elements from `first_slow` on block in `slow`.
MapFn Blocking(std::shared_ptr<SlowCalls> slow, int64_t first_slow) {
  return [slow, first_slow](Element e, const MapContext& mc) -> Result<Element> {
    if (mc.index >= first_slow) slow->Block();
    return e;
  };
}

// Makes an iterator of `ds`, reads `n` elements, waits for a blocked call,
// and returns how long destroying the iterator took.
double DestroyWhileBlocked(const Dataset& ds, int n, SlowCalls& slow) {
  std::optional<Iterator> it;
  {
    Result<Iterator> made = ds.iterator();
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return 0;
    it.emplace(std::move(made).value());
  }
  for (int i = 0; i < n; ++i) {
    Result<std::optional<Element>> e = it->next();
    EXPECT_TRUE(e.ok() && e->has_value()) << "element " << i;
  }
  EXPECT_TRUE(slow.WaitEntered(1)) << "no call blocked";
  const double ms = MillisecondsOf([&] { it.reset(); });
  slow.Release();
  return ms;
}

TEST(CancellationTest, ParallelMapCallsBlocked) {
  auto slow = std::make_shared<SlowCalls>();
  const Dataset ds = Dataset::range(100).map(Blocking(slow, 1), {.parallelism = 4});
  EXPECT_LT(DestroyWhileBlocked(ds, 1, *slow), kLimitMs);
}

TEST(CancellationTest, SequentialMapUnderPrefetch) {
  // The prefetch's worker is inside the sequential map's call.
  auto slow = std::make_shared<SlowCalls>();
  const Dataset ds = Dataset::range(100).map(Blocking(slow, 1)).prefetch(4);
  EXPECT_LT(DestroyWhileBlocked(ds, 1, *slow), kLimitMs);
}

TEST(CancellationTest, MapInsideParallelInterleave) {
  auto slow = std::make_shared<SlowCalls>();
  const Dataset ds = Dataset::range(4).interleave(
      [slow](const Element&) -> Result<Dataset> {
        return Dataset::range(100).map(Blocking(slow, 1));
      },
      {.cycle_length = 4, .parallelism = 4});
  EXPECT_LT(DestroyWhileBlocked(ds, 1, *slow), kLimitMs);
}

TEST(CancellationTest, BatchOverParallelMap) {
  auto slow = std::make_shared<SlowCalls>();
  const Dataset ds = Dataset::range(100).map(Blocking(slow, 4), {.parallelism = 4}).batch(4);
  EXPECT_LT(DestroyWhileBlocked(ds, 1, *slow), kLimitMs);
}

TEST(CancellationTest, UnorderedMapUnderShuffle) {
  auto slow = std::make_shared<SlowCalls>();
  const Dataset ds = Dataset::range(100)
                         .map(Blocking(slow, 8), {.parallelism = 4, .deterministic = false})
                         .shuffle(4, {.seed = 1});
  EXPECT_LT(DestroyWhileBlocked(ds, 1, *slow), kLimitMs);
}

TEST(CancellationTest, PipelineIsFreedOnceTheCallsReturn) {
  auto slow = std::make_shared<SlowCalls>();
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  std::atomic<int> calls_after_release{0};
  std::atomic<bool> released{false};
  {
    const Dataset ds = Dataset::range(1000).map(
        [slow, token, &calls_after_release, &released](Element e,
                                                       const MapContext& mc) -> Result<Element> {
          if (released) calls_after_release.fetch_add(1);
          if (mc.index > 0) slow->Block();
          return e;
        },
        {.parallelism = 4});
    token.reset();
    std::optional<Iterator> it;
    {
      SLUICE_ASSERT_OK_AND_ASSIGN(Iterator made, ds.iterator());
      it.emplace(std::move(made));
    }
    SLUICE_ASSERT_OK(it->next());
    ASSERT_TRUE(slow->WaitEntered(1));
    EXPECT_LT(MillisecondsOf([&] { it.reset(); }), kLimitMs);
    EXPECT_FALSE(watch.expired()) << "the function was freed while a call ran";
  }
  released = true;
  slow->Release();
  pipeline_internal::WaitForReaper();
  EXPECT_TRUE(watch.expired()) << "the pipeline was not freed after its calls returned";
  EXPECT_EQ(calls_after_release.load(), 0) << "a call started after the iterator was destroyed";
}

TEST(CancellationTest, CallsThatPollCancelledEndAtOnce) {
  // A function that watches MapContext::cancelled() stops, and the pipeline
  // is freed by the destructor itself (no call outlives it).
  std::atomic<int> running{0};
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  {
    const Dataset ds = Dataset::range(1000).map(
        [&running, token](Element e, const MapContext& mc) -> Result<Element> {
          if (mc.index == 0) return e;
          running.fetch_add(1);
          while (!mc.cancelled()) std::this_thread::yield();
          running.fetch_sub(1);
          return Status::Cancelled("stopped");
        },
        {.parallelism = 2});
    token.reset();
    std::optional<Iterator> it;
    {
      SLUICE_ASSERT_OK_AND_ASSIGN(Iterator made, ds.iterator());
      it.emplace(std::move(made));
    }
    SLUICE_ASSERT_OK(it->next());
    while (running.load() == 0) std::this_thread::yield();
    EXPECT_LT(MillisecondsOf([&] { it.reset(); }), kLimitMs);
    EXPECT_EQ(running.load(), 0);
  }
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace sluice
