// PinnedHostPool: the RAII buffers over host memory everywhere, and over
// cudaHostAlloc when a GPU is present.
#include "sluice/device/pinned_host_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "sluice/device/physical_devices.h"
#include "test_util.h"

namespace sluice::gpu {
namespace {

using ::testing::HasSubstr;

TEST(PinnedHostPoolTest, BuffersReturnToThePool) {
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedHostPool pool,
                              PinnedHostPool::CreateWithProvider(NewHostRegionProvider()));
  void* first = nullptr;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer b, pool.Acquire(100000));
    EXPECT_EQ(b.size(), 100000u);
    std::memset(b.data(), 1, b.size());
    first = b.data();
    EXPECT_EQ(pool.stats().bytes_in_use, 100352);
  }
  EXPECT_EQ(pool.stats().bytes_in_use, 0);
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer again, pool.Acquire(50000));
  EXPECT_EQ(again.data(), first);
  PinnedBuffer moved = std::move(again);
  EXPECT_FALSE(again);  // NOLINT: testing the moved-from state
  EXPECT_TRUE(moved);
  moved.Reset();
  EXPECT_FALSE(moved);
  AllocatorStats s = pool.stats();
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.num_frees, 2);
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.num_region_allocs, 1);
}

TEST(PinnedHostPoolTest, BuffersKeepThePoolAlive) {
  PinnedBuffer kept;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(PinnedHostPool pool,
                                PinnedHostPool::CreateWithProvider(NewHostRegionProvider()));
    SLUICE_ASSERT_OK_AND_ASSIGN(kept, pool.Acquire(4096));
  }
  std::memset(kept.data(), 2, kept.size());
  kept.Reset();  // returns to a pool no handle refers to any more
}

TEST(PinnedHostPoolTest, LimitIsResourceExhausted) {
  CachingAllocatorOptions options = PinnedHostPool::DefaultOptions();
  options.memory_limit = 4 << 20;
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedHostPool pool,
                              PinnedHostPool::CreateWithProvider(NewHostRegionProvider(), options));
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer a, pool.Acquire(3 << 20));
  Result<PinnedBuffer> b = pool.Acquire(3 << 20);
  ASSERT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("pinned host"));
}

TEST(PinnedHostPoolTest, CudaPinnedMemory) {
  if (Status gpu = GpuAvailability(); !gpu.ok()) GTEST_SKIP() << gpu;
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedHostPool pool, PinnedHostPool::Create());
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer b, pool.Acquire(8 << 20));
  std::memset(b.data(), 3, b.size());
  b.Reset();
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer c, pool.Acquire(1 << 20));
  EXPECT_EQ(pool.stats().num_region_allocs, 1);
  c.Reset();
  pool.ReleaseCachedMemory();
  EXPECT_EQ(pool.stats().bytes_reserved, 0);
}

TEST(PinnedHostPoolTest, WithoutADriverAcquireIsAnError) {
  if (GpuAvailability().ok()) GTEST_SKIP() << "a GPU is present";
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedHostPool pool, PinnedHostPool::Create());
  Result<PinnedBuffer> b = pool.Acquire(4096);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("cuda pinned host"));
}

}  // namespace
}  // namespace sluice::gpu
