// BlockPool's splitting, best fit and coalescing, on addresses it never
// dereferences.
#include "sluice/device/internal/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::gpu_internal {
namespace {

char* const kBase = reinterpret_cast<char*>(uintptr_t{1} << 20);

Block* Take(BlockPool& pool, size_t size, uintptr_t stream = 0) {
  Block* b = pool.TakeBestFit(size, stream);
  if (b == nullptr) return nullptr;
  pool.Split(b, size, 16);
  pool.MarkInUse(b, size);
  return b;
}

TEST(BlockPoolTest, SplitsARegionAndCoalescesItBack) {
  BlockPool pool;
  Block* whole = pool.AddRegion(kBase, 1024, 0);
  pool.Release(whole);
  Block* a = Take(pool, 256);
  Block* b = Take(pool, 256);
  Block* c = Take(pool, 256);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(a->ptr, kBase);
  EXPECT_EQ(b->ptr, kBase + 256);
  EXPECT_EQ(c->ptr, kBase + 512);
  EXPECT_EQ(pool.num_free_blocks(), 1u);
  EXPECT_EQ(pool.LargestFreeBlock(), 256u);
  // Freeing the middle leaves two separate holes; freeing a neighbour merges.
  pool.Release(b);
  EXPECT_EQ(pool.num_free_blocks(), 2u);
  pool.Release(a);
  EXPECT_EQ(pool.num_free_blocks(), 2u);
  EXPECT_EQ(pool.LargestFreeBlock(), 512u);
  pool.Release(c);
  EXPECT_EQ(pool.num_free_blocks(), 1u);
  EXPECT_EQ(pool.LargestFreeBlock(), 1024u);
  EXPECT_EQ(pool.num_in_use(), 0u);
}

TEST(BlockPoolTest, BestFitPicksTheSmallestHoleThatFits) {
  BlockPool pool;
  pool.Release(pool.AddRegion(kBase, 4096, 0));
  std::vector<Block*> blocks;
  for (size_t size : {512, 64, 1024, 64, 256, 64}) blocks.push_back(Take(pool, size));
  // Holes of 512, 1024 and 256 bytes, separated by live 64-byte blocks.
  pool.Release(blocks[0]);
  pool.Release(blocks[2]);
  pool.Release(blocks[4]);
  Block* fit = Take(pool, 200);
  EXPECT_EQ(fit->ptr, kBase + 512 + 64 + 1024 + 64);
  Block* fit2 = Take(pool, 600);
  EXPECT_EQ(fit2->ptr, kBase + 512 + 64);
}

TEST(BlockPoolTest, StreamsDoNotShareFreeBlocks) {
  BlockPool pool;
  pool.Release(pool.AddRegion(kBase, 1024, /*stream=*/7));
  EXPECT_EQ(pool.TakeBestFit(64, 0), nullptr);
  EXPECT_NE(pool.TakeBestFit(64, 7), nullptr);
}

TEST(BlockPoolTest, RemovesOnlyWhollyFreeRegions) {
  BlockPool pool;
  pool.Release(pool.AddRegion(kBase, 1024, 0));
  pool.Release(pool.AddRegion(kBase + 4096, 1024, 0));
  Block* live = Take(pool, 1024);
  ASSERT_NE(live, nullptr);
  std::vector<char*> given_back;
  EXPECT_EQ(pool.RemoveFreeRegions([&](char* base, size_t) { given_back.push_back(base); }), 1024u);
  ASSERT_EQ(given_back.size(), 1u);
  EXPECT_NE(given_back[0], live->ptr);
  EXPECT_EQ(pool.num_regions(), 1u);
}

}  // namespace
}  // namespace sluice::gpu_internal
