// The process-wide configuration of device/config.h over CUDA. One test, since
// the runtime initializes once per process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sluice/device/config.h"
#include "sluice/device/physical_devices.h"
#include "test_util.h"

namespace sluice::gpu {
namespace {

using ::testing::HasSubstr;

TEST(RuntimeConfigTest, ConfigureThenUse) {
  const std::vector<PhysicalDevice> physical = ListPhysicalDevices();
  // Before first use: configuration is accepted (or rejected for what does
  // not exist).
  EXPECT_EQ(SetVisibleDevices({static_cast<int>(physical.size())}).code(),
            StatusCode::kInvalidArgument);
  if (!physical.empty()) {
    SLUICE_ASSERT_OK(SetVisibleDevices({0}));
    const int64_t half = physical[0].total_memory / 4;
    SLUICE_ASSERT_OK(
        SetLogicalDeviceConfiguration(0, {{.memory_limit = half}, {.memory_limit = half}}));
  }
  std::vector<LogicalDevice> logical = ListLogicalDevices();
  EXPECT_EQ(logical.size(), physical.empty() ? 0u : 2u);
  // After first use: frozen, as in TensorFlow.
  Status late = SetVisibleDevices({});
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(SetMemoryLimit(0, 1 << 20).code(), StatusCode::kFailedPrecondition);
  if (physical.empty()) {
    Result<CachingAllocator*> none = GetDeviceAllocator(0);
    EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(std::string(none.status().message()), HasSubstr("no CUDA device"));
    GTEST_SKIP() << "allocation on a logical GPU not tested: " << GpuAvailability();
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(CachingAllocator * a, GetDeviceAllocator(1));
  SLUICE_ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(1 << 20));
  SLUICE_ASSERT_OK_AND_ASSIGN(AllocatorStats s, GetMemoryInfo(1));
  EXPECT_EQ(s.bytes_in_use, 1 << 20);
  EXPECT_EQ(s.memory_limit, physical[0].total_memory / 4);
  SLUICE_ASSERT_OK(a->Free(p));
  SLUICE_ASSERT_OK(ResetMemoryStats(1));
  EXPECT_EQ(GetMemoryInfo(1)->peak_bytes_in_use, 0);
}

}  // namespace
}  // namespace sluice::gpu
