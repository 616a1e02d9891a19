#include "sluice/core/device.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sluice/core/device_tensor.h"
#include "test_util.h"

namespace sluice {
namespace {

TEST(DeviceTest, ParsesSluiceAndTensorFlowNames) {
  struct Case {
    const char* name;
    Device expected;
  } cases[] = {
      {"cpu", Device::Cpu()},     {"cpu:0", Device::Cpu()},         {"CPU:2", Device::Cpu(2)},
      {"/cpu:0", Device::Cpu()},  {"/device:CPU:0", Device::Cpu()}, {"gpu", Device::Gpu(0)},
      {"GPU:1", Device::Gpu(1)},  {"cuda", Device::Gpu(0)},         {"cuda:3", Device::Gpu(3)},
      {"/gpu:0", Device::Gpu(0)}, {"/device:GPU:2", Device::Gpu(2)}};
  for (const Case& c : cases) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Device d, Device::Parse(c.name));
    EXPECT_EQ(d, c.expected) << c.name;
  }
  for (const char* bad :
       {"", "tpu", "/tpu:0", "gpu:", "/gpu:", "gpu:-1", "/gpu:1x", "gpu:x", "gpu0", "gpu:1:2"}) {
    Result<Device> d = Device::Parse(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(d.status().message().find(std::string("\"") + bad + "\""), std::string::npos)
        << d.status();
  }
}

TEST(DeviceTest, OneSpellingOut) {
  EXPECT_EQ(Device().ToString(), "cpu:0");
  EXPECT_EQ(Device::Cpu(1).ToString(), "cpu:1");
  EXPECT_EQ(Device::Gpu(3).ToString(), "gpu:3");
  EXPECT_TRUE(Device::Gpu(0).is_gpu());
  EXPECT_FALSE(Device::Gpu(0).is_cpu());
  EXPECT_EQ(Device::Gpu(2).kind(), DeviceKind::kGpu);
  EXPECT_EQ(Device::Gpu(2).index(), 2);
  EXPECT_NE(Device::Gpu(0), Device::Cpu(0));
  for (Device d : {Device::Cpu(), Device::Cpu(4), Device::Gpu(0), Device::Gpu(7)}) {
    EXPECT_EQ(*Device::Parse(d.ToString()), d);  // round trip
  }
}

struct CountingUses : DeviceMemoryUses {};

TEST(DeviceTensorTest, ViewsKeepTheDeviceTheBytesAndTheUses) {
  std::vector<float> host(12);
  auto uses = std::make_shared<CountingUses>();
  Buffer bytes = Buffer::WrapDevice(host.data(), 48, nullptr, Device::Gpu(1), uses);
  EXPECT_EQ(bytes.device(), Device::Gpu(1));
  EXPECT_EQ(bytes.device_uses(), uses.get());
  EXPECT_EQ(Buffer().device(), Device::Cpu());
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::FromBuffer(DType::kFloat32, Shape{4, 3}, bytes));
  EXPECT_EQ(t.device(), Device::Gpu(1));
  DeviceTensor d(t);
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d.device(), Device::Gpu(1));
  EXPECT_EQ(d.byte_size(), 48u);
  EXPECT_EQ(d.DebugString(), "gpu:1 float32[4,3]");
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor rows, d.Slice(1, 3));
  EXPECT_EQ(rows.device(), Device::Gpu(1));
  EXPECT_EQ(rows.uses(), uses.get());
  EXPECT_EQ(rows.raw_data(), static_cast<const char*>(d.raw_data()) + 12);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor flat, d.Reshape(Shape{12}));
  EXPECT_EQ(flat.uses(), d.uses());
  EXPECT_EQ(flat.raw_data(), d.raw_data());
  EXPECT_EQ(d.Reshape(Shape{5}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(DeviceTensor().empty());
  EXPECT_EQ(DeviceTensor().device(), Device::Cpu());
}

}  // namespace
}  // namespace sluice
