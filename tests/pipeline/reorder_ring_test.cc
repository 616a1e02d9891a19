#include "sluice/pipeline/internal/reorder_ring.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace sluice::pipeline_internal {
namespace {

TEST(ReorderRing, TakesResultsInSeqOrderWhateverTheArrivalOrder) {
  ReorderRing<int> ring;
  ring.Reset(5);
  EXPECT_FALSE(ring.FrontReady());
  ring.Put(7, 70);
  ring.Put(6, 60);
  EXPECT_FALSE(ring.FrontReady());
  ring.Put(5, 50);
  EXPECT_TRUE(ring.Has(6));
  EXPECT_FALSE(ring.Has(8));
  std::vector<int> got;
  while (ring.FrontReady()) got.push_back(ring.TakeFront());
  EXPECT_EQ(got, (std::vector<int>{50, 60, 70}));
  EXPECT_EQ(ring.front(), 8);
  EXPECT_EQ(ring.count(), 0);
}

TEST(ReorderRing, GrowsPastItsSizeAndKeepsWrappedResults) {
  ReorderRing<std::unique_ptr<int>> ring;
  // Move the front far enough that results wrap around the ring's end.
  for (int i = 0; i < 13; ++i) {
    ring.Put(i, std::make_unique<int>(i));
    ASSERT_EQ(*ring.TakeFront(), i);
  }
  // 200 results in flight, arriving backwards: the ring grows to hold them.
  for (int i = 212; i >= 13; --i) ring.Put(i, std::make_unique<int>(i));
  EXPECT_EQ(ring.count(), 200);
  std::vector<int64_t> seen;
  ring.ForEach([&](int64_t seq, const std::unique_ptr<int>& v) {
    EXPECT_EQ(seq, *v);
    seen.push_back(seq);
  });
  ASSERT_EQ(seen.size(), 200u);
  EXPECT_EQ(seen.front(), 13);
  EXPECT_EQ(seen.back(), 212);
  for (int i = 13; i <= 212; ++i) {
    ASSERT_TRUE(ring.FrontReady());
    ASSERT_EQ(*ring.TakeFront(), i);
  }
  EXPECT_FALSE(ring.FrontReady());
}

TEST(ReorderRing, ReadyRunCountsResultsInARowFromTheFront) {
  ReorderRing<int> ring;
  EXPECT_EQ(ring.ReadyRun(4), 0);  // no slots yet
  ring.Reset(14);                  // the run wraps around the ring's end
  ring.Put(15, 1);
  EXPECT_EQ(ring.ReadyRun(4), 0);  // the front is missing
  ring.Put(14, 0);
  ring.Put(16, 2);
  ring.Put(18, 4);
  EXPECT_EQ(ring.ReadyRun(10), 3);
  EXPECT_EQ(ring.ReadyRun(2), 2);  // counts no further than asked
  ring.Put(17, 3);
  EXPECT_EQ(ring.ReadyRun(100), 5);
  ring.TakeFront();
  EXPECT_EQ(ring.ReadyRun(100), 4);
}

TEST(ReorderRing, ResetDropsHeldResults) {
  ReorderRing<int> ring;
  ring.Put(0, 1);
  ring.Put(3, 4);
  ring.Reset(100);
  EXPECT_EQ(ring.count(), 0);
  EXPECT_FALSE(ring.Has(3));
  EXPECT_FALSE(ring.FrontReady());
  ring.Put(100, 9);
  EXPECT_EQ(ring.TakeFront(), 9);
}

}  // namespace
}  // namespace sluice::pipeline_internal
