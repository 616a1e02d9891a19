// The CUDA side: device listing (with and without a GPU), CUDA_VISIBLE_DEVICES,
// and the caching allocator over real cudaMalloc. Tests that need a GPU skip
// with CUDA's reason when there is none.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sluice/device/caching_allocator.h"
#include "sluice/device/physical_devices.h"
#include "test_util.h"

namespace sluice::gpu {
namespace {

using ::testing::HasSubstr;

TEST(CudaDeviceTest, ListingMatchesAvailability) {
  std::vector<PhysicalDevice> devices = ListPhysicalDevices();
  Status available = GpuAvailability();
  if (!available.ok()) {
    EXPECT_TRUE(devices.empty());
    EXPECT_EQ(available.code(), StatusCode::kUnavailable);
    EXPECT_THAT(std::string(available.message()), HasSubstr("no CUDA device: cuda"));
    return;
  }
  ASSERT_FALSE(devices.empty());
  for (size_t i = 0; i < devices.size(); ++i) {
    const PhysicalDevice& d = devices[i];
    EXPECT_EQ(d.index, static_cast<int>(i));
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.total_memory, 0);
    EXPECT_GE(d.compute_capability_major, 7);  // CUDA 13 supports Turing and newer
    EXPECT_THAT(d.ToString(), HasSubstr("/physical_device:GPU:"));
    std::printf("%s\n", d.ToString().c_str());
  }
}

// CUDA reads CUDA_VISIBLE_DEVICES once, at initialization: each case runs in
// a fresh process ("threadsafe" death tests re-execute the binary) that sets
// it before the first CUDA call and exits with the number of devices listed.
int CountDevicesWith(const char* visible) {
  setenv("CUDA_VISIBLE_DEVICES", visible, 1);
  const size_t n = ListPhysicalDevices().size();
  const bool explained =
      n > 0 ||
      std::string(GpuAvailability().message()).find("CUDA_VISIBLE_DEVICES") != std::string::npos;
  std::exit(explained ? static_cast<int>(n) : 100);
}

TEST(CudaDeviceTest, EmptyCudaVisibleDevicesHidesEveryGpu) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(CountDevicesWith(""), ::testing::ExitedWithCode(0), "");
}

TEST(CudaDeviceTest, CudaVisibleDevicesSelectsOneGpu) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The predicate runs in this process only, after the child has exited:
  // enumerating here must not happen before the child's setenv.
  auto one_if_any = [](int status) {
    const int expected = ListPhysicalDevices().empty() ? 0 : 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == expected;
  };
  EXPECT_EXIT(CountDevicesWith("0"), one_if_any, "");
}

TEST(CudaDeviceTest, AllocatorOverCudaMalloc) {
  if (Status gpu = GpuAvailability(); !gpu.ok()) GTEST_SKIP() << gpu;
  SLUICE_ASSERT_OK_AND_ASSIGN(
      auto a, CachingAllocator::Create(NewCudaDeviceRegionProvider(0),
                                       {.name = "gpu:0", .memory_limit = size_t{64} << 20}));
  SLUICE_ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(10 << 20));
  ASSERT_EQ(cudaMemset(p, 7, 10 << 20), cudaSuccess);
  std::vector<unsigned char> back(16);
  ASSERT_EQ(
      cudaMemcpy(back.data(), static_cast<char*>(p) + (10 << 20) - 16, 16, cudaMemcpyDeviceToHost),
      cudaSuccess);
  EXPECT_EQ(back[15], 7);
  SLUICE_ASSERT_OK(a->Free(p));
  SLUICE_ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(4 << 20));
  EXPECT_EQ(q, p);  // from the cache
  EXPECT_EQ(a->stats().num_region_allocs, 1);
  Result<void*> over = a->Allocate(size_t{100} << 20);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  SLUICE_ASSERT_OK(a->Free(q));
}

TEST(CudaDeviceTest, GrowthEndsInResourceExhaustedNotACrash) {
  if (Status gpu = GpuAvailability(); !gpu.ok()) GTEST_SKIP() << gpu;
  SLUICE_ASSERT_OK_AND_ASSIGN(auto a, CachingAllocator::Create(NewCudaDeviceRegionProvider(0)));
  const auto total = static_cast<size_t>(ListPhysicalDevices()[0].total_memory);
  Result<void*> p = a->Allocate(total + (size_t{1} << 30));
  ASSERT_EQ(p.status().code(), StatusCode::kResourceExhausted) << p.status();
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("cudaErrorMemoryAllocation"));
  // The failed cudaMalloc left no sticky error behind.
  SLUICE_ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(1 << 20));
  SLUICE_ASSERT_OK(a->Free(q));
}

}  // namespace
}  // namespace sluice::gpu
