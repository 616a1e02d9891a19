// Helpers for the tests of streams, device tensors and prefetch_to_device:
// a fixture run once per device ("cpu:0" everywhere, "gpu:0" skipped
// without a GPU) and a gate that holds a stream until the test opens it.
#ifndef SLUICE_TESTS_GPU_DEVICE_TEST_UTIL_H_
#define SLUICE_TESTS_GPU_DEVICE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

#include "sluice/device/caching_allocator.h"
#include "sluice/device/physical_devices.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/region_provider.h"
#include "sluice/device/stream.h"
#include "test_util.h"

namespace sluice::gpu::testing {

class OnEachDevice : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Result<Device> d = Device::Parse(GetParam());
    ASSERT_TRUE(d.ok()) << d.status();
    device_ = *d;
    if (!device_.is_cpu()) {
      if (Status s = GpuAvailability(); !s.ok()) GTEST_SKIP() << s;
    }
  }
  Device device_;
};

inline std::string DeviceTestName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param == "cpu:0" ? "Host" : "Gpu";
}

// A device allocator over heap memory (a GPU's limit, if `limit` > 0).
inline std::unique_ptr<CachingAllocator> HostAllocator(size_t limit = 0) {
  return std::move(CachingAllocator::Create(NewHostRegionProvider(),
                                            {.name = "test device", .memory_limit = limit}))
      .value();
}

// Host memory asynchronous copies may use: pinned for a GPU (a pageable
// copy would wait for the stream, and so for a closed Gate), heap for the host.
inline Result<PinnedHostPool> StagingPool(const Device& device) {
  if (device.is_cpu()) return PinnedHostPool::CreateWithProvider(NewHostRegionProvider());
  return PinnedHostPool::Create();
}

// Close() queues a host function that blocks `stream` until Open().
class Gate {
 public:
  Gate() : opened_(promise_.get_future().share()) {}
  ~Gate() { Open(); }
  Status Close(Stream& stream) {
    std::shared_future<void> opened = opened_;
    return stream.LaunchHostFunc([opened] { opened.wait(); });
  }
  void Open() {
    if (!open_) promise_.set_value();
    open_ = true;
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_;
  bool open_ = false;
};

}  // namespace sluice::gpu::testing

#endif  // SLUICE_TESTS_GPU_DEVICE_TEST_UTIL_H_
