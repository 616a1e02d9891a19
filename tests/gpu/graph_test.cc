// Stream capture and Graph launches, on the host backend everywhere and on
// a GPU when present: captured work does not run until launched, runs
// whole at each launch, in order with the stream's other work, and the
// calls that would break a capture are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "device_test_util.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/stream.h"

namespace sluice::gpu {
namespace {

using ::sluice::gpu::testing::DeviceTestName;
using ::sluice::gpu::testing::OnEachDevice;

using GraphTest = OnEachDevice;

// A graph of two device-to-device copies: b = a, then c = b. Each launch
// redoes both, reading whatever `a` holds at that point of the stream.
TEST_P(GraphTest, CapturedWorkRunsOnlyWhenLaunchedAndInOrder) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
  constexpr size_t kBytes = 4096;
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor a, AllocateDeviceTensor(device_, DType::kUInt8, Shape{kBytes}, stream.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor b, AllocateDeviceTensor(device_, DType::kUInt8, Shape{kBytes}, stream.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor c, AllocateDeviceTensor(device_, DType::kUInt8, Shape{kBytes}, stream.get()));
  std::vector<uint8_t> zeros(kBytes, 0), host(kBytes);
  for (DeviceTensor* t : {&a, &b, &c})
    SLUICE_ASSERT_OK(CopyToDeviceAsync(zeros.data(), *t, *stream));
  SLUICE_ASSERT_OK(stream->Synchronize());

  EXPECT_FALSE(stream->capturing());
  SLUICE_ASSERT_OK(stream->BeginCapture());
  EXPECT_TRUE(stream->capturing());
  SLUICE_ASSERT_OK(
      stream->CopyAsync(b.raw_data(), a.raw_data(), kBytes, CopyDirection::kDeviceToDevice));
  SLUICE_ASSERT_OK(
      stream->CopyAsync(c.raw_data(), b.raw_data(), kBytes, CopyDirection::kDeviceToDevice));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> graph, stream->EndCapture());
  EXPECT_FALSE(stream->capturing());
  EXPECT_EQ(graph->num_nodes(), 2);

  for (int round = 1; round <= 3; ++round) {
    std::vector<uint8_t> pattern(kBytes);
    for (size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<uint8_t>(i * round + 7);
    // Not run at capture, and each launch sees the input queued before it.
    SLUICE_ASSERT_OK(CopyToHostAsync(c, host.data(), *stream));
    SLUICE_ASSERT_OK(stream->Synchronize());
    if (round == 1) {
      EXPECT_EQ(host, zeros) << "the capture ran the work";
    }
    SLUICE_ASSERT_OK(CopyToDeviceAsync(pattern.data(), a, *stream));
    SLUICE_ASSERT_OK(graph->Launch(*stream));
    SLUICE_ASSERT_OK(CopyToHostAsync(c, host.data(), *stream));
    SLUICE_ASSERT_OK(stream->Synchronize());
    EXPECT_EQ(host, pattern) << "round " << round;
  }
}

TEST_P(GraphTest, CallsThatWouldBreakACaptureAreRefused) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> event, NewEvent(device_));
  EXPECT_EQ(stream->EndCapture().status().code(), StatusCode::kFailedPrecondition);
  SLUICE_ASSERT_OK(stream->BeginCapture());
  EXPECT_EQ(stream->BeginCapture().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(stream->Synchronize().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(stream->Record(*event).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(stream->WaitFor(*event).code(), StatusCode::kFailedPrecondition);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> empty, stream->EndCapture());
  EXPECT_EQ(empty->num_nodes(), 0);
  SLUICE_ASSERT_OK(empty->Launch(*stream));
  SLUICE_EXPECT_OK(stream->Synchronize());  // the stream works as before
  SLUICE_EXPECT_OK(stream->Record(*event));
}

TEST_P(GraphTest, HostFunctionsAreCapturedToo) {
  if (!device_.is_cpu()) GTEST_SKIP() << "host functions in CUDA graphs: covered by CUDA";
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
  int runs = 0;
  SLUICE_ASSERT_OK(stream->BeginCapture());
  SLUICE_ASSERT_OK(stream->LaunchHostFunc([&runs] { ++runs; }));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> graph, stream->EndCapture());
  SLUICE_ASSERT_OK(stream->Synchronize());
  EXPECT_EQ(runs, 0);
  for (int i = 0; i < 4; ++i) SLUICE_ASSERT_OK(graph->Launch(*stream));
  graph.reset();  // launches already queued keep what they need
  SLUICE_ASSERT_OK(stream->Synchronize());
  EXPECT_EQ(runs, 4);
}

INSTANTIATE_TEST_SUITE_P(Devices, GraphTest, ::testing::Values("cpu:0", "gpu:0"), DeviceTestName);

}  // namespace
}  // namespace sluice::gpu
