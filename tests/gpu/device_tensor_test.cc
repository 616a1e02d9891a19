// DeviceTensor: ownership over an allocator, argument checks, and blocking
// round trips through the pinned pool on each device.
#include "sluice/device/device_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_test_util.h"

namespace sluice::gpu {
namespace {

using ::sluice::gpu::testing::DeviceTestName;
using ::sluice::gpu::testing::HostAllocator;
using ::sluice::gpu::testing::OnEachDevice;
using ::testing::HasSubstr;

TEST(DeviceTensorTest, TheLastHandleFreesTheBlock) {
  auto allocator = HostAllocator();
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor t, AllocateDeviceTensor(*allocator, Device::Cpu(),
                                                                     DType::kFloat32, Shape{2, 3}));
    EXPECT_EQ(t.byte_size(), 24u);
    EXPECT_EQ(t.num_elements(), 6);
    EXPECT_NE(t.raw_data(), nullptr);
    EXPECT_EQ(t.DebugString(), "cpu:0 float32[2,3]");
    DeviceTensor shared = t;
    EXPECT_EQ(shared.raw_data(), t.raw_data());
    t = DeviceTensor();
    EXPECT_EQ(t.raw_data(), nullptr);
    EXPECT_EQ(allocator->stats().num_frees, 0);  // `shared` still holds it
  }
  EXPECT_EQ(allocator->stats().bytes_in_use, 0);
  EXPECT_EQ(allocator->stats().num_frees, 1);
}

TEST(DeviceTensorTest, RejectsStringsAndUndefinedShapes) {
  auto allocator = HostAllocator();
  EXPECT_EQ(
      AllocateDeviceTensor(*allocator, Device::Cpu(), DType::kString, Shape{2}).status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(
      AllocateDeviceTensor(*allocator, Device::Cpu(), DType::kInt64, Shape{Shape::kUnknownDim})
          .status()
          .code(),
      StatusCode::kInvalidArgument);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(Device::Cpu()));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor strings, Tensor::FromStrings({"a", "b"}));
  EXPECT_EQ(CopyToDevice(strings, *stream).status().code(), StatusCode::kInvalidArgument);
}

TEST(DeviceTensorTest, ExhaustedDeviceMemoryIsResourceExhausted) {
  auto allocator = HostAllocator(4 << 20);
  Result<DeviceTensor> t =
      AllocateDeviceTensor(*allocator, Device::Cpu(), DType::kFloat32, Shape{2 << 20});
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("test device"));
}

class DeviceTensorRoundTrip : public OnEachDevice {};

TEST_P(DeviceTensorRoundTrip, CopiesThereAndBack) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, NewStream(device_));
  std::vector<float> values(3 * 1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor host, Tensor::FromVector<float>(values, Shape{3, 1000}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor row, host.Row(1));  // a view at an offset
  for (const Tensor& t : {host, row, Tensor()}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor d, CopyToDevice(t, *stream));
    EXPECT_EQ(d.device(), device_);
    EXPECT_EQ(d.shape(), t.shape());
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, CopyToHost(d, *stream));
    EXPECT_TRUE(Identical(back, t)) << back.DebugString() << " vs " << t.DebugString();
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceTensorRoundTrip, ::testing::Values("cpu:0", "gpu:0"),
                         DeviceTestName);

}  // namespace
}  // namespace sluice::gpu
