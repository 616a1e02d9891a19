// The tf.config rules (visibility, logical devices, limits, configure before
// first use) over two pretend GPUs backed by host memory.
#include "sluice/device/internal/device_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice::gpu_internal {
namespace {

using gpu::CachingAllocator;
using gpu::LogicalDevice;
using gpu::NewHostRegionProvider;
using gpu::PhysicalDevice;
using ::testing::HasSubstr;

constexpr int64_t kMiB = 1 << 20;

DeviceManager TwoGpus() {
  std::vector<PhysicalDevice> devices(2);
  for (int i = 0; i < 2; ++i) {
    devices[i].index = i;
    devices[i].name = "Pretend GPU";
    devices[i].total_memory = 64 * kMiB;
  }
  return DeviceManager(std::move(devices), Status::OK(), [](const PhysicalDevice& d) {
    return NewHostRegionProvider(static_cast<size_t>(d.total_memory));
  });
}

TEST(DeviceManagerTest, DefaultIsOneGrowingDevicePerGpu) {
  DeviceManager m = TwoGpus();
  EXPECT_FALSE(m.initialized());
  std::vector<LogicalDevice> logical = m.ListLogicalDevices();
  EXPECT_TRUE(m.initialized());
  ASSERT_EQ(logical.size(), 2u);
  EXPECT_EQ(logical[1].physical_index, 1);
  EXPECT_EQ(logical[1].memory_limit, 0);
  EXPECT_EQ(logical[1].ToString(), "/device:GPU:1 (on /physical_device:GPU:1, grow on demand)");
  SLUICE_ASSERT_OK_AND_ASSIGN(CachingAllocator * a, m.GetAllocator(1));
  EXPECT_EQ(a->options().name, "gpu:1");
  // Growing on demand ends where the GPU's memory ends.
  Result<void*> too_big = a->Allocate(65 * kMiB);
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  SLUICE_ASSERT_OK_AND_ASSIGN(CachingAllocator * again, m.GetAllocator(1));
  EXPECT_EQ(a, again);
}

TEST(DeviceManagerTest, VisibleDevicesChooseAndOrderGpus) {
  DeviceManager m = TwoGpus();
  SLUICE_ASSERT_OK(m.SetVisibleDevices({1}));
  EXPECT_EQ(m.GetVisibleDevices(), std::vector<int>{1});
  std::vector<LogicalDevice> logical = m.ListLogicalDevices();
  ASSERT_EQ(logical.size(), 1u);
  EXPECT_EQ(logical[0].physical_index, 1);
  EXPECT_EQ(m.GetAllocator(1).status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(m.GetAllocator(1).status().message()), HasSubstr("gpu:1"));
}

TEST(DeviceManagerTest, HidingEveryGpu) {
  DeviceManager m = TwoGpus();
  SLUICE_ASSERT_OK(m.SetVisibleDevices({}));
  EXPECT_TRUE(m.ListLogicalDevices().empty());
  EXPECT_EQ(m.GetAllocator(0).status().code(), StatusCode::kNotFound);
}

TEST(DeviceManagerTest, BadVisibleDevices) {
  DeviceManager m = TwoGpus();
  EXPECT_EQ(m.SetVisibleDevices({2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.SetVisibleDevices({-1}).code(), StatusCode::kInvalidArgument);
  Status twice = m.SetVisibleDevices({0, 0});
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.message()), HasSubstr("listed twice"));
  EXPECT_EQ(m.GetVisibleDevices(), (std::vector<int>{0, 1}));  // unchanged
}

TEST(DeviceManagerTest, LogicalDevicesSplitAGpuWithTheirOwnLimits) {
  DeviceManager m = TwoGpus();
  SLUICE_ASSERT_OK(m.SetVisibleDevices({0}));
  SLUICE_ASSERT_OK(m.SetLogicalDeviceConfiguration(
      0, {{.memory_limit = 8 * kMiB}, {.memory_limit = 16 * kMiB}}));
  std::vector<LogicalDevice> logical = m.ListLogicalDevices();
  ASSERT_EQ(logical.size(), 2u);
  EXPECT_EQ(logical[0].physical_index, 0);
  EXPECT_EQ(logical[1].physical_index, 0);
  EXPECT_EQ(logical[1].memory_limit, 16 * kMiB);
  SLUICE_ASSERT_OK_AND_ASSIGN(CachingAllocator * a0, m.GetAllocator(0));
  SLUICE_ASSERT_OK_AND_ASSIGN(CachingAllocator * a1, m.GetAllocator(1));
  EXPECT_NE(a0, a1);
  SLUICE_ASSERT_OK(a1->Allocate(12 * kMiB));
  Result<void*> over = a0->Allocate(12 * kMiB);
  ASSERT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("gpu:0"));
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("memory limit 8.0 MiB"));
}

TEST(DeviceManagerTest, BadLogicalConfigurations) {
  DeviceManager m = TwoGpus();
  EXPECT_EQ(m.SetLogicalDeviceConfiguration(0, {{.memory_limit = -1}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      m.SetLogicalDeviceConfiguration(0, {{.memory_limit = 0}, {.memory_limit = kMiB}}).code(),
      StatusCode::kInvalidArgument);
  Status too_much = m.SetLogicalDeviceConfiguration(
      1, {{.memory_limit = 40 * kMiB}, {.memory_limit = 40 * kMiB}});
  EXPECT_EQ(too_much.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_much.message()), HasSubstr("64.0 MiB"));
  EXPECT_EQ(m.SetLogicalDeviceConfiguration(5, {}).code(), StatusCode::kInvalidArgument);
  SLUICE_ASSERT_OK_AND_ASSIGN(auto configs, m.GetLogicalDeviceConfiguration(1));
  EXPECT_TRUE(configs.empty());
  // One entry is a plain memory limit; {} restores the default.
  SLUICE_ASSERT_OK(m.SetLogicalDeviceConfiguration(1, {{.memory_limit = 4 * kMiB}}));
  SLUICE_ASSERT_OK(m.SetLogicalDeviceConfiguration(1, {}));
  SLUICE_ASSERT_OK_AND_ASSIGN(configs, m.GetLogicalDeviceConfiguration(1));
  EXPECT_TRUE(configs.empty());
}

TEST(DeviceManagerTest, ConfigurationIsFrozenByFirstUse) {
  DeviceManager m = TwoGpus();
  SLUICE_ASSERT_OK(m.GetAllocator(0));
  Status visible = m.SetVisibleDevices({0});
  EXPECT_EQ(visible.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(visible.message()),
              HasSubstr("after the GPU runtime has been initialized"));
  EXPECT_EQ(m.SetLogicalDeviceConfiguration(0, {{.memory_limit = kMiB}}).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(m.ListLogicalDevices().size(), 2u);
}

TEST(DeviceManagerTest, NoGpuExplainsWhy) {
  DeviceManager m({}, Status::Unavailable("no CUDA device: cudaErrorNoDevice"),
                  [](const PhysicalDevice&) { return NewHostRegionProvider(); });
  Status s = m.SetVisibleDevices({0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cudaErrorNoDevice"));
  SLUICE_ASSERT_OK(m.SetVisibleDevices({}));
  EXPECT_TRUE(m.ListLogicalDevices().empty());
  EXPECT_THAT(std::string(m.GetAllocator(0).status().message()), HasSubstr("cudaErrorNoDevice"));
}

}  // namespace
}  // namespace sluice::gpu_internal
