// Dataset::prefetch_to_device through the shared conformance suite on each
// device: cpu:0 everywhere, gpu:0 when a GPU is present (the GPU bundle
// runs it there). The suite reads elements on the host, so on a GPU a map
// above the stage copies each one back (gpu::CopyToHost) and checks that
// its tensors were device memory of the stage's device first.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "conformance.h"
#include "device_test_util.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/stream.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::gpu {
namespace {

using ::sluice::gpu::testing::DeviceTestName;
using ::sluice::gpu::testing::OnEachDevice;

class PrefetchToDeviceStageTest : public OnEachDevice {};

// `ds` ended by prefetch_to_device(device), read back into host tensors.
Dataset ReadBack(const Dataset& on_device, const Device& device, std::shared_ptr<Stream> stream) {
  return on_device.map([device, stream](Element e) -> Result<Element> {
    std::vector<Tensor> host;
    for (const Tensor& t : e.components()) {
      if (t.device() != device) {
        return Status::Internal("a tensor on " + t.device().ToString() + ", expected " +
                                device.ToString());
      }
      SLUICE_ASSIGN_OR_RETURN(Tensor back, CopyToHost(DeviceTensor(t), *stream));
      host.push_back(std::move(back));
    }
    return Element(std::move(host), e.shared_names());
  });
}

TEST_P(PrefetchToDeviceStageTest, PassesTheConformanceSuite) {
  std::shared_ptr<Stream> stream = NewStream(device_).value();
  const Device device = device_;
  sluice::testing::RunConformance(
      {.name = "prefetch_to_device on " + device.ToString(),
       .make =
           [device, stream](int p) {
             const Dataset in = Dataset::range(48)
                                    .shuffle(8, {.seed = 4, .reshuffle_each_iteration = false})
                                    .map([](Element e) { return e; }, {.parallelism = p})
                                    .batch(3);
             return ReadBack(in.prefetch_to_device(device, 4), device, stream);
           },
       .make_failing =
           [device, stream] {
             const Dataset in = Dataset::range(9).map([](Element e) -> Result<Element> {
               if (e[0].flat<int64_t>()[0] == 5) return Status::DataLoss("five fails");
               return e;
             });
             return ReadBack(in.prefetch_to_device(device, 2), device, stream);
           },
       .error_substring = "five fails"});
}

INSTANTIATE_TEST_SUITE_P(Devices, PrefetchToDeviceStageTest, ::testing::Values("cpu:0", "gpu:0"),
                         DeviceTestName);

}  // namespace
}  // namespace sluice::gpu
