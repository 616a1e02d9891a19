// Cross-stream frees: CachingAllocator::FreeAfter, DeviceTensor::RecordUse
// and DeviceElement::RecordUse, on the host backend's streams and events
// (and on a GPU's when present). A Gate holds the using stream shut, so
// "the work has not run yet" is a state of the test, not a race.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "device_test_util.h"
#include "sluice/device/caching_allocator.h"
#include "sluice/device/device_memory.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/prefetch_to_device.h"

namespace sluice::gpu {
namespace {

using ::sluice::gpu::testing::DeviceTestName;
using ::sluice::gpu::testing::Gate;
using ::sluice::gpu::testing::HostAllocator;
using ::sluice::gpu::testing::OnEachDevice;
using ::testing::HasSubstr;

constexpr size_t kMiB = 1024 * 1024;

// An event recorded on `stream` now.
std::shared_ptr<Event> RecordedOn(Stream& stream) {
  std::shared_ptr<Event> e = NewEvent(stream.device()).value();
  EXPECT_TRUE(stream.Record(*e).ok());
  return e;
}

TEST(FreeAfterTest, TheBlockWaitsForTheEventsThenReturnsToItsStream) {
  auto a = HostAllocator();
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> other, NewStream(Device::Cpu()));
  Gate gate;
  ASSERT_TRUE(gate.Close(*other).ok());
  void* p = a->Allocate(1000, /*stream=*/7).value();
  ASSERT_TRUE(a->FreeAfter(p, {RecordedOn(*other)}).ok());
  EXPECT_EQ(a->stats().pending_frees, 1);
  EXPECT_EQ(a->stats().bytes_in_use, 1024);
  // Still in use by `other`: a new request gets another block.
  void* q = a->Allocate(1000, 7).value();
  EXPECT_NE(q, p);
  EXPECT_THAT(a->Free(p).message(), HasSubstr("not a live block"));  // already handed back
  EXPECT_THAT(a->FreeAfter(p, {}).message(), HasSubstr("not a live block"));
  gate.Open();
  ASSERT_TRUE(other->Synchronize().ok());
  ASSERT_TRUE(a->Free(q).ok());
  // The event has completed: the next Allocate frees p first and may reuse it.
  void* r = a->Allocate(1000, 7).value();
  EXPECT_EQ(a->stats().pending_frees, 0);
  EXPECT_EQ(a->stats().num_frees, 2);
  EXPECT_EQ(a->stats().bytes_in_use, 1024);
  ASSERT_TRUE(a->Free(r).ok());
  EXPECT_THAT(a->stats().ToString(), HasSubstr("3 frees (0 pending)"));
}

TEST(FreeAfterTest, WaitsForEveryEventAndIgnoresNullOnes) {
  auto a = HostAllocator();
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s1, NewStream(Device::Cpu()));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s2, NewStream(Device::Cpu()));
  Gate g1, g2;
  ASSERT_TRUE(g1.Close(*s1).ok());
  ASSERT_TRUE(g2.Close(*s2).ok());
  void* p = a->Allocate(5000).value();
  ASSERT_TRUE(a->FreeAfter(p, {RecordedOn(*s1), nullptr, RecordedOn(*s2)}).ok());
  g1.Open();
  ASSERT_TRUE(s1->Synchronize().ok());
  a->ReleaseCachedMemory();  // also looks at pending frees
  EXPECT_EQ(a->stats().pending_frees, 1);
  g2.Open();
  ASSERT_TRUE(s2->Synchronize().ok());
  a->ReleaseCachedMemory();
  EXPECT_EQ(a->stats().pending_frees, 0);
  EXPECT_EQ(a->stats().bytes_reserved, 0);
  // No events at all is a plain free.
  void* q = a->Allocate(10).value();
  ASSERT_TRUE(a->FreeAfter(q, {nullptr}).ok());
  EXPECT_EQ(a->stats().bytes_in_use, 0);
}

TEST(FreeAfterTest, ARequestThatWouldFailWaitsForPendingFrees) {
  auto a = HostAllocator(/*limit=*/2 * kMiB);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> other, NewStream(Device::Cpu()));
  Gate gate;
  ASSERT_TRUE(gate.Close(*other).ok());
  void* p = a->Allocate(2 * kMiB).value();
  ASSERT_TRUE(a->FreeAfter(p, {RecordedOn(*other)}).ok());
  // Opens the gate from another thread; whether before or after Allocate
  // starts waiting, the request is met once the event completes.
  std::thread opener([&] { gate.Open(); });
  Result<void*> q = a->Allocate(2 * kMiB);
  opener.join();
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(a->stats().num_ooms, 0);
  EXPECT_EQ(a->stats().pending_frees, 0);
  ASSERT_TRUE(a->Free(*q).ok());
}

class RecordUseTest : public OnEachDevice {};

TEST_P(RecordUseTest, ATensorDroppedWhileAnotherStreamReadsItStaysAllocated) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> home, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> reader, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(auto staging, testing::StagingPool(device_));
  auto allocator = device_.is_cpu() ? HostAllocator() : nullptr;
  auto allocate = [&]() -> Result<DeviceTensor> {
    if (allocator)
      return AllocateDeviceTensor(*allocator, device_, DType::kUInt8, Shape{4096}, home->id());
    return AllocateDeviceTensor(device_, DType::kUInt8, Shape{4096}, home.get());
  };
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor t, allocate());
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer pattern, staging.Acquire(4096));
  std::memset(pattern.data(), 0x5a, 4096);
  ASSERT_TRUE(CopyToDeviceAsync(pattern.data(), t, *home).ok());
  ASSERT_TRUE(home->Synchronize().ok());

  Gate gate;
  ASSERT_TRUE(gate.Close(*reader).ok());
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer copy, staging.Acquire(4096));
  ASSERT_TRUE(CopyToHostAsync(t, copy.data(), *reader).ok());  // queued behind the gate
  ASSERT_TRUE(RecordUse(t, *reader).ok());
  const void* old = t.raw_data();
  t = DeviceTensor();  // the last handle

  // The home stream overwrites whatever it is given now: never `old`'s bytes.
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor next, allocate());
  EXPECT_NE(next.raw_data(), old);
  SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer zeros, staging.Acquire(4096));
  std::memset(zeros.data(), 0, 4096);
  ASSERT_TRUE(CopyToDeviceAsync(zeros.data(), next, *home).ok());
  ASSERT_TRUE(home->Synchronize().ok());
  gate.Open();
  ASSERT_TRUE(reader->Synchronize().ok());
  EXPECT_EQ(static_cast<const uint8_t*>(copy.data())[0], 0x5a);
  EXPECT_EQ(static_cast<const uint8_t*>(copy.data())[4095], 0x5a);
  if (allocator) {
    EXPECT_EQ(allocator->stats().pending_frees, 1);
    next = DeviceTensor();
    allocator->ReleaseCachedMemory();
    EXPECT_EQ(allocator->stats().pending_frees, 0);
    EXPECT_EQ(allocator->stats().bytes_in_use, 0);
  }
}

TEST_P(RecordUseTest, OtherDevicesAndEmptyTensors) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
  // An empty tensor lives on cpu:0 and has no memory to hold back.
  EXPECT_EQ(RecordUse(DeviceTensor(), *stream).ok(), device_.is_cpu());
  auto allocator = HostAllocator();
  const Device other = device_.is_cpu() ? Device::Gpu(0) : Device::Cpu();
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor t,
                              AllocateDeviceTensor(*allocator, other, DType::kFloat32, Shape{4}));
  EXPECT_THAT(RecordUse(t, *stream).message(), HasSubstr("cannot be used on a"));
}

TEST_P(RecordUseTest, ABatchFromPrefetchToDeviceCanBeDroppedAtOnce) {
  std::vector<float> values(64 * 100);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor all,
                              Tensor::FromVector(std::span<const float>(values), Shape{100, 64}));
  Dataset ds = Dataset::from_tensor_slices({all}).batch(10);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it, PrefetchToDevice(ds, device_, {.depth = 2}));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> compute, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(auto staging, testing::StagingPool(device_));
  std::vector<PinnedBuffer> outs;
  Gate gate;
  ASSERT_TRUE(gate.Close(*compute).ok());
  for (int b = 0; b < 10; ++b) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> batch, it.Next());
    ASSERT_TRUE(batch.has_value());
    ASSERT_TRUE(batch->WaitOn(*compute).ok());
    SLUICE_ASSERT_OK_AND_ASSIGN(PinnedBuffer out, staging.Acquire((*batch)[0].byte_size()));
    ASSERT_TRUE(CopyToHostAsync((*batch)[0], out.data(), *compute).ok());
    ASSERT_TRUE(batch->RecordUse(*compute).ok());
    outs.push_back(std::move(out));
  }  // every batch dropped while `compute` has not run any of its reads
  gate.Open();
  ASSERT_TRUE(compute->Synchronize().ok());
  for (int b = 0; b < 10; ++b) {
    const auto* got = static_cast<const float*>(outs[b].data());
    EXPECT_EQ(got[0], static_cast<float>(b * 640)) << "batch " << b;
    EXPECT_EQ(got[639], static_cast<float>(b * 640 + 639)) << "batch " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, RecordUseTest, ::testing::Values("cpu:0", "gpu:0"),
                         DeviceTestName);

}  // namespace
}  // namespace sluice::gpu
