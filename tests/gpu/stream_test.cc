// Streams and events on each device: order, events, cross-stream waits,
// destruction. The host backend runs everywhere; the GPU one skips without
// a GPU.
#include "sluice/device/stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "device_test_util.h"
#include "sluice/device/device_memory.h"

namespace sluice::gpu {
namespace {

using ::sluice::gpu::testing::DeviceTestName;
using ::sluice::gpu::testing::Gate;
using ::sluice::gpu::testing::OnEachDevice;
using ::testing::HasSubstr;

TEST(DeviceTest, GpuIsUnavailableWithTheReason) {
  if (GpuAvailability().ok()) GTEST_SKIP() << "a GPU is present";
  Result<std::unique_ptr<Stream>> s = NewStream(Device::Gpu(0));
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("gpu:0: "));
}

class StreamTest : public OnEachDevice {};

// A pinned buffer of n int32 holding 0, 1, 2... (or -1 everywhere).
PinnedBuffer Ints(PinnedHostPool& pool, size_t n, bool iota) {
  Result<PinnedBuffer> b = pool.Acquire(n * sizeof(int32_t));
  EXPECT_TRUE(b.ok()) << b.status();
  if (!b.ok()) return {};
  auto* p = static_cast<int32_t*>(b->data());
  for (size_t i = 0; i < n; ++i) p[i] = iota ? static_cast<int32_t>(i) : -1;
  return std::move(b).value();
}

bool SameInts(const PinnedBuffer& a, const PinnedBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

TEST_P(StreamTest, CopiesRunInOrderAndEventsMarkThem) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> done, NewEvent(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(bool ready, done->Query());
  EXPECT_TRUE(ready);  // never recorded
  SLUICE_EXPECT_OK(done->Synchronize());

  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedHostPool pool, testing::StagingPool(device_));
  const size_t n = 1 << 18;
  PinnedBuffer src = Ints(pool, n, true);
  PinnedBuffer dst = Ints(pool, n, false);
  const Shape shape{static_cast<int64_t>(n)};
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor a,
                              AllocateDeviceTensor(device_, DType::kInt32, shape, stream.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor b,
                              AllocateDeviceTensor(device_, DType::kInt32, shape, stream.get()));
  Gate gate;
  SLUICE_ASSERT_OK(gate.Close(*stream));
  SLUICE_ASSERT_OK(CopyToDeviceAsync(src.data(), a, *stream));
  SLUICE_ASSERT_OK(
      stream->CopyAsync(b.raw_data(), a.raw_data(), a.byte_size(), CopyDirection::kDeviceToDevice));
  SLUICE_ASSERT_OK(CopyToHostAsync(b, dst.data(), *stream));
  SLUICE_ASSERT_OK(stream->Record(*done));
  SLUICE_ASSERT_OK_AND_ASSIGN(ready, done->Query());
  EXPECT_FALSE(ready);  // held by the gate
  gate.Open();
  SLUICE_ASSERT_OK(done->Synchronize());
  SLUICE_ASSERT_OK_AND_ASSIGN(ready, done->Query());
  EXPECT_TRUE(ready);
  EXPECT_TRUE(SameInts(dst, src));
}

TEST_P(StreamTest, WaitForOrdersTwoStreamsWithoutBlockingTheCaller) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> producer, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> consumer, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> produced, NewEvent(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> consumed, NewEvent(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedHostPool pool, testing::StagingPool(device_));
  PinnedBuffer src = Ints(pool, 4096, true);
  PinnedBuffer dst = Ints(pool, 4096, false);
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor t, AllocateDeviceTensor(device_, DType::kInt32, Shape{4096}, producer.get()));
  Gate gate;
  SLUICE_ASSERT_OK(gate.Close(*producer));
  SLUICE_ASSERT_OK(CopyToDeviceAsync(src.data(), t, *producer));
  SLUICE_ASSERT_OK(producer->Record(*produced));
  SLUICE_ASSERT_OK(consumer->WaitFor(*produced));  // returns at once
  SLUICE_ASSERT_OK(CopyToHostAsync(t, dst.data(), *consumer));
  SLUICE_ASSERT_OK(consumer->Record(*consumed));
  SLUICE_ASSERT_OK_AND_ASSIGN(bool ready, consumed->Query());
  EXPECT_FALSE(ready);
  produced.reset();  // a pending event may go away
  gate.Open();
  SLUICE_ASSERT_OK(consumed->Synchronize());
  EXPECT_TRUE(SameInts(dst, src));
}

TEST_P(StreamTest, ManyThreadsQueueAndSynchronize) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Result<std::unique_ptr<Event>> e = NewEvent(device_);
      ASSERT_TRUE(e.ok()) << e.status();
      for (int i = 0; i < 200; ++i) {
        SLUICE_ASSERT_OK(stream->LaunchHostFunc([&ran] { ran.fetch_add(1); }));
        SLUICE_ASSERT_OK(stream->Record(**e));
      }
      SLUICE_ASSERT_OK((*e)->Synchronize());
    });
  }
  for (std::thread& t : threads) t.join();
  SLUICE_ASSERT_OK(stream->Synchronize());
  EXPECT_EQ(ran.load(), 800);
}

TEST_P(StreamTest, DestroyingAStreamRunsItsQueuedWork) {
  std::atomic<int> ran{0};
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
    for (int i = 0; i < 100; ++i) {
      SLUICE_ASSERT_OK(stream->LaunchHostFunc([&ran] { ran.fetch_add(1); }));
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

// A host function that synchronizes its own stream would wait for itself.
TEST(HostStreamDeathTest, SynchronizeFromItsOwnHostFunctionAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::unique_ptr<Stream> stream = NewStream(Device::Cpu()).value();
        Stream* s = stream.get();
        (void)s->LaunchHostFunc([s] { (void)s->Synchronize(); });
        (void)s->Synchronize();
      },
      "Drain\\(\\) from one of its own closures");
}

INSTANTIATE_TEST_SUITE_P(Devices, StreamTest, ::testing::Values("cpu:0", "gpu:0"), DeviceTestName);

}  // namespace
}  // namespace sluice::gpu
