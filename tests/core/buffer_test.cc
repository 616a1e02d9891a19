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

}  // namespace
}  // namespace sluice
