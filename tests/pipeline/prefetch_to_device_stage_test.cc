// Dataset::prefetch_to_device on cpu:0, the device runtime's host backend,
// in every build: the shared conformance suite (elements, save/restore at
// every position over positional and shuffled inputs, determinism,
// cancellation, errors), where the elements live, and the errors it names.
// tests/gpu/ runs the same stage on gpu:0 when a GPU is present.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "conformance.h"
#include "sluice/core/device.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/physical_devices.h"
#include "sluice/device/stream.h"
#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::Int64Elements;
using testing::ReadAll;
using testing::RunConformance;

int64_t Value(const Element& e) { return e[0].flat<int64_t>()[0]; }

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST(PrefetchToDeviceStageTest, ConformanceOverAPositionalInput) {
  RunConformance({.name = "prefetch_to_device",
                  .make =
                      [](int p) {
                        return Dataset::range(40)
                            .map([](Element e) { return e; }, {.parallelism = p})
                            .prefetch_to_device("cpu:0", 3);
                      },
                  .expected = Int64Elements(Iota(40)),
                  .make_failing =
                      [] {
                        return Dataset::range(10)
                            .map([](Element e) -> Result<Element> {
                              if (Value(e) == 6) return Status::DataLoss("bad six");
                              return e;
                            })
                            .prefetch_to_device("cpu:0", 2);
                      },
                  .error_substring = "bad six"});
}

TEST(PrefetchToDeviceStageTest, ConformanceOverShuffledBatches) {
  // A shuffle is not positional: a save writes the buffered host batches.
  RunConformance({.name = "prefetch_to_device(shuffle.batch)", .make = [](int p) {
                    return Dataset::range(60)
                        .shuffle(16, {.seed = 3, .reshuffle_each_iteration = false})
                        .map([](Element e) { return e; }, {.parallelism = p})
                        .batch(4)
                        .prefetch_to_device(Device::Cpu(), 5);
                  }});
}

TEST(PrefetchToDeviceStageTest, ElementsAreDeviceMemoryOfTheDevice) {
  const Dataset ds = Dataset::from_tensor_slices({*Tensor::FromVector<float>({1, 2, 3, 4})}, {"x"})
                         .batch(2)
                         .prefetch_to_device("/device:CPU:0");
  EXPECT_EQ(ds.element_spec().DebugString(), "(x: float32[?])");
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, it.next());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->names()[0], "x");
  EXPECT_EQ((*e)[0].device(), Device::Cpu());
  // The runtime's block, tracked for stream-ordered reuse.
  EXPECT_NE((*e)[0].buffer().device_uses(), nullptr);
  EXPECT_EQ(e->DebugString(), "(x: float32[2] {1, 2})");
  SLUICE_ASSERT_OK_AND_ASSIGN(auto stream, gpu::NewStream(Device::Cpu()));
  SLUICE_EXPECT_OK(gpu::RecordUse((*e)[0], *stream));
  EXPECT_EQ(ReadAll(ds).size(), 2u);
}

TEST(PrefetchToDeviceStageTest, ErrorsArriveInOrderAndTheStageGoesOn) {
  const Dataset ds = Dataset::range(6)
                         .map([](Element e) -> Result<Element> {
                           if (Value(e) == 2) return Status::DataLoss("two is bad");
                           return e;
                         })
                         .prefetch_to_device("cpu:0", 4)
                         .ignore_errors();
  EXPECT_EQ(ReadAll(ds), Int64Elements({0, 1, 3, 4, 5}));
}

TEST(PrefetchToDeviceStageTest, BadArgumentsAreNamed) {
  auto message = [](const Dataset& ds) {
    Result<Iterator> it = ds.iterator();
    return it.ok() ? std::string("ok") : it.status().ToString();
  };
  const Dataset strings =
      Dataset::from_tensor_slices({*Tensor::FromStrings(std::vector<std::string>{"a"})});
  EXPECT_NE(message(strings.prefetch_to_device("cpu:0")).find("component 0 is a string tensor"),
            std::string::npos);
  EXPECT_NE(message(Dataset::range(3).prefetch_to_device("cpu:0", 0)).find("buffer_size"),
            std::string::npos);
  EXPECT_NE(message(Dataset::range(3).prefetch_to_device("tpu:0")).find("\"tpu:0\""),
            std::string::npos);
  EXPECT_NE(message(Dataset::range(3).prefetch_to_device("cpu:1")).find("cpu:1"),
            std::string::npos);
  if (!gpu::GpuAvailability().ok()) {
    const std::string m = message(Dataset::range(3).prefetch_to_device("gpu:0"));
    EXPECT_NE(m.find("Unavailable"), std::string::npos) << m;
    EXPECT_NE(m.find("prefetch_to_device(gpu:0)"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace sluice
