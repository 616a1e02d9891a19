// ReadBuffer (records/internal/read_buffer.h), the read buffer under the
// streaming record readers, on a scripted byte source.
#include "sluice/records/internal/read_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"

namespace sluice {
namespace {

using records_internal::ByteSource;
using records_internal::ReadBuffer;

constexpr size_t kSize = 4096;

// Serves `data` at most `chunk` bytes a read; a read at or past `fail_at`
// fails.
class FakeSource final : public ByteSource {
 public:
  FakeSource(std::string data, size_t chunk) : data_(std::move(data)), chunk_(chunk) {}

  Result<size_t> Read(uint8_t* dst, size_t n) override {
    ++reads;
    largest_request = std::max(largest_request, n);
    if (fail_at && at_ >= *fail_at) return Status::DataLoss("fake source: corrupt");
    const size_t k = std::min({n, chunk_, data_.size() - at_});
    std::memcpy(dst, data_.data() + at_, k);
    at_ += k;
    return k;
  }
  Status CheckCleanEnd() override { return Status::OK(); }
  Status SeekTo(uint64_t offset) override {
    ++seeks;
    at_ = static_cast<size_t>(offset);
    return Status::OK();
  }
  std::string Where() const override { return ""; }

  int reads = 0;
  int seeks = 0;
  size_t largest_request = 0;
  std::optional<size_t> fail_at;

 private:
  std::string data_;
  size_t chunk_;
  size_t at_ = 0;
};

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i % 251);
  return s;
}

std::string View(const ReadBuffer& b, size_t n) {
  return std::string(reinterpret_cast<const char*>(b.data()), n);
}

ReadBuffer Make(FakeSource& source, ReadBuffer::Options o = {}) {
  if (o.buffer_size == 4096) o.buffer_size = kSize;
  return ReadBuffer(&source, "fake.bin", o);
}

TEST(ReadBufferTest, TailMovesToTheStartOfAnUnsharedBuffer) {
  const std::string data = Pattern(3 * kSize);
  FakeSource source(data, kSize);
  ReadBuffer b = Make(source);
  SLUICE_ASSERT_OK_AND_ASSIGN(size_t have, b.Ensure(100, true));
  EXPECT_EQ(have, kSize);  // a read fills what fits
  const uint8_t* start = b.buffer().data();
  b.Consume(kSize - 10);
  SLUICE_ASSERT_OK_AND_ASSIGN(have, b.Ensure(50, true));
  EXPECT_EQ(b.buffer().data(), start);  // the same buffer: nobody else holds it
  EXPECT_EQ(b.data(), start);           // the tail at its start
  EXPECT_EQ(b.offset(), kSize - 10);
  EXPECT_EQ(have, kSize);
  EXPECT_EQ(View(b, have), data.substr(kSize - 10, kSize));
  EXPECT_EQ(b.buffer_bytes(), kSize);
}

TEST(ReadBufferTest, SharedBufferIsNeverOverwritten) {
  const std::string data = Pattern(3 * kSize);
  FakeSource source(data, kSize);
  ReadBuffer b = Make(source);
  SLUICE_ASSERT_OK(b.Ensure(100, true));
  const Buffer held = b.buffer();  // a record's view keeps it
  const std::string before(reinterpret_cast<const char*>(held.data()), kSize);
  b.Consume(kSize - 10);
  SLUICE_ASSERT_OK_AND_ASSIGN(size_t have, b.Ensure(kSize, true));
  EXPECT_FALSE(b.buffer().SameAllocation(held));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(held.data()), kSize), before);
  EXPECT_EQ(have, kSize);
  EXPECT_EQ(View(b, kSize), data.substr(kSize - 10, kSize));
  // The held buffer is a spare now, counted until a read takes it back.
  EXPECT_EQ(b.buffer_bytes(), 2 * kSize);
}

TEST(ReadBufferTest, SparesAreRecycledAndCapped) {
  FakeSource source(Pattern(20 * kSize), kSize);
  ReadBuffer b = Make(source);
  std::vector<Buffer> held;
  std::vector<const uint8_t*> addresses;
  for (int i = 0; i < 5; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(size_t have, b.Ensure(kSize, true));
    ASSERT_EQ(have, kSize);
    held.push_back(b.buffer());
    addresses.push_back(b.buffer().data());
    b.Consume(kSize);
  }
  // Five buffers made; the current and three spares kept.
  EXPECT_EQ(b.buffer_bytes(), 4 * kSize);
  held.clear();
  EXPECT_EQ(b.buffer_bytes(), 4 * kSize);
  // A record holds the current buffer: the next read takes the oldest spare
  // (alive in the reader, so no fresh allocation can have its address).
  const Buffer record = b.buffer();
  SLUICE_ASSERT_OK(b.Ensure(kSize, true));
  EXPECT_EQ(b.buffer().data(), addresses[1]);
  EXPECT_EQ(b.buffer_bytes(), 4 * kSize);
  EXPECT_EQ(b.offset(), 5 * kSize);
}

TEST(ReadBufferTest, LargerBuffersGoWithTheirRecords) {
  const std::string data = Pattern(8 * kSize);
  FakeSource source(data, 8 * kSize);
  ReadBuffer b = Make(source);
  SLUICE_ASSERT_OK(b.Ensure(10, true));
  SLUICE_ASSERT_OK_AND_ASSIGN(size_t have, b.Ensure(3 * kSize, true));  // trusted: at once
  EXPECT_EQ(have, 3 * kSize);
  EXPECT_EQ(b.buffer().size(), 3 * kSize);
  // The first buffer is a spare; the larger one is counted while unshared.
  EXPECT_EQ(b.buffer_bytes(), 4 * kSize);
  Buffer record = b.buffer();
  EXPECT_EQ(b.buffer_bytes(), kSize);  // shared: the record's
  b.Consume(3 * kSize);
  b.ReleaseIfOversized();
  EXPECT_FALSE(b.buffer());
  EXPECT_EQ(b.offset(), 3 * kSize);
  SLUICE_ASSERT_OK_AND_ASSIGN(have, b.Ensure(10, true));
  EXPECT_EQ(b.buffer().size(), kSize);
  EXPECT_EQ(View(b, 10), data.substr(3 * kSize, 10));
  // A larger buffer left while a record holds it is not kept as a spare.
  b.Consume(have);
  SLUICE_ASSERT_OK(b.Ensure(2 * kSize, true));
  record = b.buffer();  // 2 * kSize, shared
  b.Consume(2 * kSize - 5);
  SLUICE_ASSERT_OK(b.Ensure(10, true));
  EXPECT_EQ(b.buffer().size(), kSize);
  EXPECT_EQ(b.buffer_bytes(), kSize);
}

TEST(ReadBufferTest, ShrinkLeavesALargerUnsharedBuffer) {
  for (bool shrink : {false, true}) {
    FakeSource source(Pattern(8 * kSize), 8 * kSize);
    ReadBuffer b = Make(source, {.shrink = shrink});
    SLUICE_ASSERT_OK(b.Ensure(3 * kSize, true));
    b.Consume(3 * kSize - 10);
    SLUICE_ASSERT_OK(b.Reserve(kSize));
    EXPECT_EQ(b.buffer().size(), shrink ? kSize : 3 * kSize) << shrink;
    EXPECT_EQ(b.available(), 10u);
    EXPECT_EQ(b.offset(), 3 * kSize - 10);
  }
}

TEST(ReadBufferTest, UntrustedNeedGrowsOnlyAsBytesArrive) {
  // A corrupt length from a compressed stream: a petabyte, 10 bytes behind it.
  FakeSource short_source(Pattern(10), kSize);
  ReadBuffer b = Make(short_source);
  SLUICE_ASSERT_OK_AND_ASSIGN(size_t have, b.Ensure(uint64_t{1} << 50, false));
  EXPECT_EQ(have, 10u);
  EXPECT_EQ(b.buffer().size(), kSize);
  EXPECT_LE(short_source.largest_request, kSize);

  // Real bytes arrive: the buffer doubles while it is full of them.
  const std::string data = Pattern(3 * kSize + 5);
  FakeSource source(data, kSize);
  ReadBuffer g = Make(source);
  SLUICE_ASSERT_OK_AND_ASSIGN(have, g.Ensure(uint64_t{1} << 50, false));
  EXPECT_EQ(have, data.size());
  EXPECT_EQ(g.buffer().size(), 4 * kSize);
  EXPECT_EQ(View(g, have), data);

  // Up to exactly what is needed.
  FakeSource exact(data, kSize);
  ReadBuffer e = Make(exact);
  SLUICE_ASSERT_OK_AND_ASSIGN(have, e.Ensure(3 * kSize, false));
  EXPECT_EQ(have, 3 * kSize);
  EXPECT_EQ(e.buffer().size(), 3 * kSize);
}

TEST(ReadBufferTest, SourceThatEndsEarly) {
  const std::string data = Pattern(30);
  FakeSource source(data, 7);
  ReadBuffer b = Make(source);
  SLUICE_ASSERT_OK_AND_ASSIGN(size_t have, b.Ensure(100, true));
  EXPECT_EQ(have, 30u);
  EXPECT_EQ(View(b, 30), data);
  // Asked again, it reads again (a growing file may have more by now).
  const int reads = source.reads;
  SLUICE_ASSERT_OK_AND_ASSIGN(have, b.Ensure(100, true));
  EXPECT_EQ(have, 30u);
  EXPECT_EQ(source.reads, reads + 1);
  // Bytes at hand need no read.
  SLUICE_ASSERT_OK_AND_ASSIGN(have, b.Ensure(30, true));
  EXPECT_EQ(source.reads, reads + 1);
  b.Consume(30);
  SLUICE_ASSERT_OK_AND_ASSIGN(have, b.Ensure(1, true));
  EXPECT_EQ(have, 0u);
  EXPECT_EQ(b.offset(), 30u);
}

TEST(ReadBufferTest, SourceErrorsPassThrough) {
  FakeSource source(Pattern(3 * kSize), 100);
  source.fail_at = 250;
  ReadBuffer b = Make(source);
  SLUICE_EXPECT_ERROR(b.Ensure(1000, true), StatusCode::kDataLoss, "fake source: corrupt");
  EXPECT_EQ(b.available(), 300u);  // what arrived before stays
}

TEST(ReadBufferTest, AllocationFailureNamesTheFile) {
  FakeSource source(Pattern(10), kSize);
  ReadBuffer named(&source, "big.bin", {});
  SLUICE_EXPECT_ERROR(named.Ensure(Buffer::kMaxAllocation + 1, true),
                      StatusCode::kResourceExhausted, "reading big.bin");
  ReadBuffer unnamed(&source, "", {});
  const Status s = sluice::testing::ToStatus(unnamed.Ensure(Buffer::kMaxAllocation + 1, true));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message().find("reading"), std::string::npos) << s;
}

TEST(ReadBufferTest, ReadSomeReadsOnceIntoTheRoomLeft) {
  FakeSource source(Pattern(3 * kSize), 1000);
  ReadBuffer b = Make(source);
  EXPECT_TRUE(b.full());  // no buffer yet
  SLUICE_ASSERT_OK(b.Reserve(1));
  EXPECT_FALSE(b.full());
  SLUICE_ASSERT_OK_AND_ASSIGN(size_t got, b.ReadSome());
  EXPECT_EQ(got, 1000u);
  EXPECT_EQ(b.available(), 1000u);
  EXPECT_EQ(source.reads, 1);
}

TEST(ReadBufferTest, SeekWithinTheBufferedBytesOrPastThem) {
  const std::string data = Pattern(4 * kSize);
  FakeSource source(data, kSize);
  ReadBuffer b = Make(source);
  SLUICE_ASSERT_OK(b.Ensure(kSize, true));
  b.Consume(100);
  SLUICE_ASSERT_OK(b.SeekTo(40));  // back, still buffered
  EXPECT_EQ(b.offset(), 40u);
  EXPECT_EQ(b.available(), kSize - 40);
  SLUICE_ASSERT_OK(b.SeekTo(kSize));  // the end of what is buffered
  EXPECT_EQ(b.available(), 0u);
  EXPECT_EQ(source.seeks, 0);
  SLUICE_ASSERT_OK(b.SeekTo(3 * kSize));  // past it: the source seeks
  EXPECT_EQ(source.seeks, 1);
  EXPECT_EQ(b.offset(), 3 * kSize);
  SLUICE_ASSERT_OK_AND_ASSIGN(size_t have, b.Ensure(10, true));
  EXPECT_EQ(have, kSize);
  EXPECT_EQ(View(b, 10), data.substr(3 * kSize, 10));
}

}  // namespace
}  // namespace sluice
