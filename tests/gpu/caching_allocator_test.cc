// CachingAllocator over host memory: the same code that runs over cudaMalloc.
#include "sluice/device/caching_allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "test_util.h"

namespace sluice::gpu {
namespace {

using ::testing::HasSubstr;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

std::unique_ptr<CachingAllocator> Make(CachingAllocatorOptions options = {}, size_t capacity = 0) {
  auto a = CachingAllocator::Create(NewHostRegionProvider(capacity), std::move(options));
  EXPECT_TRUE(a.ok()) << a.status();
  return std::move(a).value();
}

void* Alloc(CachingAllocator& a, size_t bytes, StreamId stream = 0) {
  Result<void*> p = a.Allocate(bytes, stream);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.value_or(nullptr);
}

TEST(CachingAllocatorTest, RoundsAlignsAndReusesWithoutNewRegions) {
  auto a = Make();
  void* p = Alloc(*a, 1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  EXPECT_EQ(*a->AllocatedSize(p), 1024u);
  std::memset(p, 0xab, 1000);
  AllocatorStats s = a->stats();
  EXPECT_EQ(s.bytes_in_use, 1024);
  EXPECT_EQ(s.requested_bytes_in_use, 1000);
  EXPECT_EQ(s.bytes_reserved, static_cast<int64_t>(2 * kMiB));  // one small region
  EXPECT_EQ(s.num_region_allocs, 1);
  EXPECT_EQ(s.cache_hits, 0);
  SLUICE_ASSERT_OK(a->Free(p));
  for (int i = 0; i < 100; ++i) {
    void* q = Alloc(*a, 4000);
    SLUICE_ASSERT_OK(a->Free(q));
  }
  s = a->stats();
  EXPECT_EQ(s.num_region_allocs, 1);  // the hot path never reached the provider
  EXPECT_EQ(s.cache_hits, 100);
  EXPECT_EQ(s.num_allocs, 101);
  EXPECT_EQ(s.num_frees, 101);
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(s.largest_free_block, static_cast<int64_t>(2 * kMiB));
}

TEST(CachingAllocatorTest, ZeroBytesIsAUniqueBlock) {
  auto a = Make();
  void* p = Alloc(*a, 0);
  void* q = Alloc(*a, 0);
  EXPECT_NE(p, q);
  EXPECT_EQ(*a->AllocatedSize(p), 512u);
}

TEST(CachingAllocatorTest, SmallRequestsShareARegionAndCoalesce) {
  auto a = Make();
  std::vector<void*> ptrs;
  for (int i = 0; i < 4; ++i) ptrs.push_back(Alloc(*a, 256 * kKiB));
  EXPECT_EQ(a->stats().num_region_allocs, 1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(static_cast<char*>(ptrs[i]) + 256 * kKiB, ptrs[i + 1]);
  }
  // Free out of order; the region becomes one free block again.
  for (int i : {1, 3, 0, 2}) SLUICE_ASSERT_OK(a->Free(ptrs[i]));
  EXPECT_EQ(a->stats().largest_free_block, static_cast<int64_t>(2 * kMiB));
  void* whole = Alloc(*a, 2 * kMiB);
  EXPECT_EQ(whole, ptrs[0]);
  EXPECT_EQ(a->stats().num_region_allocs, 1);
}

TEST(CachingAllocatorTest, LargeRequestsGetTheirOwnRoundedRegion) {
  auto a = Make();
  void* p = Alloc(*a, 5 * kMiB + 1);
  ASSERT_NE(p, nullptr);
  AllocatorStats s = a->stats();
  EXPECT_EQ(s.bytes_reserved, static_cast<int64_t>(6 * kMiB));
  EXPECT_EQ(s.bytes_in_use, static_cast<int64_t>(5 * kMiB + 512));
  // The tail of that region serves a later small request.
  void* q = Alloc(*a, 100 * kKiB);
  EXPECT_EQ(a->stats().num_region_allocs, 1);
  EXPECT_EQ(static_cast<char*>(q), static_cast<char*>(p) + 5 * kMiB + 512);
}

TEST(CachingAllocatorTest, LimitIsResourceExhaustedWithTheSizes) {
  auto a = Make({.name = "gpu:0", .memory_limit = 4 * kMiB});
  void* p = Alloc(*a, 3 * kMiB);
  ASSERT_NE(p, nullptr);
  Result<void*> q = a->Allocate(2 * kMiB);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kResourceExhausted);
  const std::string msg(q.status().message());
  EXPECT_THAT(msg, HasSubstr("gpu:0"));
  EXPECT_THAT(msg, HasSubstr("2.0 MiB (2097152 bytes)"));  // the request
  EXPECT_THAT(msg, HasSubstr("memory limit 4.0 MiB (4194304 bytes)"));
  EXPECT_THAT(msg, HasSubstr("in use 3.0 MiB (3145728 bytes)"));
  EXPECT_EQ(a->stats().num_ooms, 1);
  // What fits in the rest of the region still works.
  void* r = Alloc(*a, 1 * kMiB);
  EXPECT_NE(r, nullptr);
  EXPECT_EQ(a->stats().bytes_reserved, static_cast<int64_t>(4 * kMiB));
}

TEST(CachingAllocatorTest, FreesCachedRegionsBeforeGivingUp) {
  auto a = Make({.memory_limit = 8 * kMiB});
  void* big = Alloc(*a, 6 * kMiB);
  SLUICE_ASSERT_OK(a->Free(big));  // 6 MiB cached, not in use
  EXPECT_EQ(a->stats().bytes_cached, static_cast<int64_t>(6 * kMiB));
  // 4 MiB does not fit beside the cached 6 MiB region... but it fits inside.
  void* p = Alloc(*a, 4 * kMiB);
  EXPECT_EQ(p, big);
  SLUICE_ASSERT_OK(a->Free(p));
  // On another stream the cached region cannot be reused: it is returned and
  // a new one reserved.
  void* q = Alloc(*a, 4 * kMiB, /*stream=*/1);
  ASSERT_NE(q, nullptr);
  AllocatorStats s = a->stats();
  EXPECT_EQ(s.num_region_frees, 1);
  EXPECT_EQ(s.bytes_reserved, static_cast<int64_t>(4 * kMiB));
}

TEST(CachingAllocatorTest, GrowsOnDemandUntilTheProviderIsFull) {
  // A 10 MiB "device" without a limit: the provider's refusal is the limit.
  auto a = Make({.name = "gpu:1"}, /*capacity=*/10 * kMiB);
  std::vector<void*> ptrs;
  for (int i = 0; i < 5; ++i) ptrs.push_back(Alloc(*a, 2 * kMiB));
  Result<void*> more = a->Allocate(1);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("none (grow on demand)"));
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("exceed its capacity"));
  SLUICE_ASSERT_OK(a->Free(ptrs[0]));
  EXPECT_NE(Alloc(*a, 1), nullptr);
}

TEST(CachingAllocatorTest, FragmentationIsReportedAndHealsOnCoalescing) {
  auto a = Make({.memory_limit = 2 * kMiB});
  std::vector<void*> ptrs;
  for (int i = 0; i < 8; ++i) ptrs.push_back(Alloc(*a, 256 * kKiB));
  for (int i = 0; i < 8; i += 2) SLUICE_ASSERT_OK(a->Free(ptrs[i]));
  // 1 MiB is free in total, but in 256 KiB holes.
  AllocatorStats s = a->stats();
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(1 * kMiB));
  EXPECT_EQ(s.largest_free_block, static_cast<int64_t>(256 * kKiB));
  Result<void*> big = a->Allocate(512 * kKiB);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("largest free block 256.0 KiB"));
  SLUICE_ASSERT_OK(a->Free(ptrs[1]));  // joins holes 0, 1 and 2
  void* p = Alloc(*a, 512 * kKiB);
  EXPECT_EQ(p, ptrs[0]);
}

TEST(CachingAllocatorTest, BlocksStayOnTheirStream) {
  auto a = Make();
  void* p = Alloc(*a, 1024, /*stream=*/1);
  SLUICE_ASSERT_OK(a->Free(p));
  void* q = Alloc(*a, 1024, /*stream=*/2);
  EXPECT_NE(q, p);
  EXPECT_EQ(a->stats().num_region_allocs, 2);
  void* r = Alloc(*a, 1024, /*stream=*/1);
  EXPECT_EQ(r, p);
}

TEST(CachingAllocatorTest, BadFreesAreErrorsNotCrashes) {
  auto a = Make({.name = "pinned host"});
  void* p = Alloc(*a, 4096);
  Status inner = a->Free(static_cast<char*>(p) + 512);
  EXPECT_EQ(inner.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(inner.message()), HasSubstr("pinned host"));
  SLUICE_ASSERT_OK(a->Free(p));
  EXPECT_EQ(a->Free(p).code(), StatusCode::kInvalidArgument);
  int on_stack = 0;
  EXPECT_EQ(a->Free(&on_stack).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->AllocatedSize(p).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->stats().num_frees, 1);
}

TEST(CachingAllocatorTest, HugeRequestsAreRefusedWithoutOverflow) {
  auto a = Make();
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 100, size_t{1} << 60}) {
    Result<void*> p = a->Allocate(bytes);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted) << p.status();
  }
  EXPECT_EQ(a->stats().num_region_allocs, 0);
}

TEST(CachingAllocatorTest, ReleaseCachedMemoryAndPeaks) {
  auto a = Make();
  void* q = Alloc(*a, 1000);
  void* p = Alloc(*a, 3 * kMiB);
  SLUICE_ASSERT_OK(a->Free(p));
  AllocatorStats s = a->stats();
  EXPECT_EQ(s.peak_bytes_in_use, static_cast<int64_t>(3 * kMiB + 1024));
  EXPECT_EQ(s.num_regions, 2);
  a->ReleaseCachedMemory();  // the 4 MiB region is free; the small one is not
  s = a->stats();
  EXPECT_EQ(s.num_regions, 1);
  EXPECT_EQ(s.bytes_reserved, static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(s.peak_bytes_reserved, static_cast<int64_t>(6 * kMiB));
  a->ResetPeakStats();
  s = a->stats();
  EXPECT_EQ(s.peak_bytes_in_use, 1024);
  EXPECT_EQ(s.peak_bytes_reserved, static_cast<int64_t>(2 * kMiB));
  EXPECT_THAT(s.ToString(), HasSubstr("in use 1.0 KiB (peak 1.0 KiB)"));
  SLUICE_ASSERT_OK(a->Free(q));
}

TEST(CachingAllocatorTest, RejectsBadOptions) {
  EXPECT_EQ(CachingAllocator::Create(NewHostRegionProvider(), {.alignment = 100}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CachingAllocator::Create(NewHostRegionProvider(),
                                     {.small_size = 4 * kMiB, .small_region = 2 * kMiB})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CachingAllocator::Create(nullptr).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::gpu
