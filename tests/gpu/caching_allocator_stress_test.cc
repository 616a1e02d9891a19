// CachingAllocator under random and concurrent use: live blocks never
// overlap, their bytes are never touched by another owner, and the counters
// add up at the end.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "sluice/device/caching_allocator.h"
#include "test_util.h"

namespace sluice::gpu {
namespace {

struct Live {
  char* ptr;
  size_t size;
  unsigned char tag;
};

// Allocates and frees random sizes, filling each block with its tag and
// checking the tag before freeing it.
void Churn(CachingAllocator& a, uint32_t seed, int steps, StreamId stream) {
  std::mt19937 rng(seed);
  std::vector<Live> live;
  for (int i = 0; i < steps; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      // Mostly small, sometimes large, as tensors are.
      size_t size = rng() % 32 == 0 ? 1 + rng() % (3 << 20) : 1 + rng() % 20000;
      Result<void*> p = a.Allocate(size, stream);
      if (!p.ok()) {
        ASSERT_EQ(p.status().code(), StatusCode::kResourceExhausted) << p.status();
        continue;
      }
      auto tag = static_cast<unsigned char>(rng());
      std::memset(*p, tag, size);
      live.push_back({static_cast<char*>(*p), size, tag});
    } else {
      size_t k = rng() % live.size();
      Live l = live[k];
      live[k] = live.back();
      live.pop_back();
      for (size_t j = 0; j < l.size; j += 97)
        ASSERT_EQ(static_cast<unsigned char>(l.ptr[j]), l.tag);
      ASSERT_EQ(static_cast<unsigned char>(l.ptr[l.size - 1]), l.tag);
      SLUICE_ASSERT_OK(a.Free(l.ptr));
    }
  }
  for (const Live& l : live) SLUICE_ASSERT_OK(a.Free(l.ptr));
}

TEST(CachingAllocatorStressTest, RandomUseKeepsBlocksDisjoint) {
  auto a = std::move(CachingAllocator::Create(NewHostRegionProvider(), {.memory_limit = 24 << 20}))
               .value();
  std::mt19937 rng(1);
  std::map<char*, size_t> live;  // start -> size, to check for overlaps
  for (int i = 0; i < 4000; ++i) {
    if (live.empty() || rng() % 2 == 0) {
      size_t size = 1 + rng() % (rng() % 10 == 0 ? (4 << 20) : 50000);
      Result<void*> p = a->Allocate(size);
      if (!p.ok()) {
        ASSERT_EQ(p.status().code(), StatusCode::kResourceExhausted);
        continue;
      }
      char* c = static_cast<char*>(*p);
      auto next = live.lower_bound(c);
      if (next != live.end()) {
        ASSERT_LE(c + size, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, c);
      }
      live[c] = size;
    } else {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      SLUICE_ASSERT_OK(a->Free(it->first));
      live.erase(it);
    }
    AllocatorStats s = a->stats();
    ASSERT_LE(s.bytes_reserved, 24 << 20);
    ASSERT_EQ(s.bytes_cached, s.bytes_reserved - s.bytes_in_use);
  }
  for (auto& [p, size] : live) SLUICE_ASSERT_OK(a->Free(p));
  a->ReleaseCachedMemory();
  AllocatorStats s = a->stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_reserved, 0);
  EXPECT_EQ(s.num_regions, 0);
  EXPECT_EQ(s.num_allocs, s.num_frees);
}

TEST(CachingAllocatorStressTest, ThreadsShareOneAllocator) {
  auto a = std::move(CachingAllocator::Create(NewHostRegionProvider(), {.memory_limit = 64 << 20}))
               .value();
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    // Two threads per stream: sharing a stream's blocks and not sharing.
    threads.emplace_back([&a, t] { Churn(*a, 100 + t, 3000, t % 2); });
  }
  for (auto& th : threads) th.join();
  AllocatorStats s = a->stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.requested_bytes_in_use, 0);
  EXPECT_EQ(s.num_allocs, s.num_frees);
  EXPECT_GT(s.cache_hits, s.num_region_allocs);
  EXPECT_LE(s.peak_bytes_reserved, 64 << 20);
}

}  // namespace
}  // namespace sluice::gpu
