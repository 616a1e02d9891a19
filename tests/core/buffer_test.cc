#include "sluice/core/buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace sluice {
namespace {

TEST(BufferTest, AllocateIsAligned) {
  for (size_t size : {0, 1, 63, 64, 65, 4096, 1 << 20}) {
    Result<Buffer> b = Buffer::Allocate(size);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->size(), size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % Buffer::kAlignment, 0u);
    if (size) std::memset(b->data(), 0xab, size);  // ASan checks the bounds
  }
}

TEST(BufferTest, HugeAllocationIsResourceExhausted) {
  Result<Buffer> b = Buffer::Allocate(Buffer::kMaxAllocation + 1);
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
}

TEST(BufferTest, ZeroedAndShared) {
  Buffer a = *Buffer::AllocateZeroed(100);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(a.data()[i], 0);
  EXPECT_TRUE(a.unique());
  Buffer b = a;
  EXPECT_EQ(a.use_count(), 2);
  EXPECT_EQ(b.data(), a.data());
  EXPECT_TRUE(b.SameAllocation(a));
  EXPECT_FALSE(b.SameAllocation(*Buffer::AllocateZeroed(100)));
  EXPECT_FALSE(Buffer().SameAllocation(Buffer()));
  b.data()[3] = 7;
  EXPECT_EQ(a.data()[3], 7);
  Buffer c = std::move(b);
  EXPECT_EQ(a.use_count(), 2);
  EXPECT_FALSE(b);  // NOLINT(bugprone-use-after-move): moved-from is null
  c = Buffer();
  EXPECT_TRUE(a.unique());
}

TEST(BufferTest, WrapReleasesOnceOnLastReference) {
  int released = 0;
  std::vector<char> storage(10);
  {
    Buffer w = Buffer::Wrap(storage.data(), storage.size(), [&] { ++released; });
    EXPECT_EQ(w.size(), 10u);
    Buffer copy = w;
    Buffer assigned;
    assigned = copy;
    EXPECT_EQ(w.use_count(), 3);
  }
  EXPECT_EQ(released, 1);
}

TEST(BufferTest, SelfAssignmentKeepsBytes) {
  Buffer a = *Buffer::Allocate(8);
  Buffer& ref = a;
  a = ref;
  EXPECT_TRUE(a.unique());
  a = std::move(ref);
  EXPECT_TRUE(a.unique());
}

TEST(BufferTest, ConcurrentCopiesAreSafe) {
  Buffer a = *Buffer::Allocate(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([a] {
      for (int i = 0; i < 10000; ++i) {
        Buffer c = a;
        (void)c.data();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(a.unique());
}

// Freed blocks are reused only outside sanitizer builds (reuse would hide
// use-after-free there).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRecycling = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kRecycling = false;
#else
constexpr bool kRecycling = true;
#endif
#else
constexpr bool kRecycling = true;
#endif

// Large blocks are recycled (outside sanitizer builds): the next allocation of about the same size
// gets the freed block back, and AllocateZeroed still zeroes it.
TEST(BufferTest, LargeBlocksAreRecycledAndStillZeroed) {
  const size_t size = size_t{24} << 20;
  uint8_t* first = nullptr;
  {
    Result<Buffer> a = Buffer::Allocate(size);
    ASSERT_TRUE(a.ok());
    first = a->data();
    std::memset(a->data(), 0xab, size);
  }
  Result<Buffer> b = Buffer::AllocateZeroed(size - 4096);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), size - 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % Buffer::kAlignment, 0u);
  for (size_t i = 0; i < b->size(); i += 4093) ASSERT_EQ(b->data()[i], 0) << i;
  if (kRecycling) {
    EXPECT_EQ(b->data(), first);
  }
  // A much smaller request does not take the big block.
  Result<Buffer> small = Buffer::Allocate(size / 4);
  ASSERT_TRUE(small.ok());
  EXPECT_NE(small->data(), b->data());
}

// Image-sized blocks (a 224x224x3 float image, 588 KiB) are recycled too:
// the threshold is 256 KiB.
TEST(BufferTest, ImageSizedBlocksAreRecycled) {
  const size_t image = size_t{224} * 224 * 3 * sizeof(float);
  uint8_t* first = nullptr;
  {
    Result<Buffer> a = Buffer::Allocate(image);
    ASSERT_TRUE(a.ok());
    first = a->data();
  }
  Result<Buffer> b = Buffer::Allocate(image);
  ASSERT_TRUE(b.ok());
  if (kRecycling) {
    EXPECT_EQ(b->data(), first);
  }
}

}  // namespace
}  // namespace sluice
