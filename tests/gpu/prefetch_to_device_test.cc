// prefetch_to_device: order, names, overlap without blocking, back-pressure,
// staging lifetime, errors in order, cancellation. On "cpu:0" (the host
// backend) everywhere; the device-parameterized cases also on "gpu:0"
// when a GPU is present.
#include "sluice/pipeline/prefetch_to_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "device_test_util.h"
#include "sluice/device/region_provider.h"

namespace sluice::gpu {
namespace {

using ::sluice::gpu::testing::DeviceTestName;
using ::sluice::gpu::testing::Gate;
using ::sluice::gpu::testing::OnEachDevice;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The int64 values of a device tensor, read back on `stream` after the
// element's copies (without blocking before the read itself).
std::vector<int64_t> Int64s(const DeviceElement& e, size_t i, Stream& stream) {
  EXPECT_TRUE(e.WaitOn(stream).ok());
  Result<Tensor> host = CopyToHost(e[i], stream);
  EXPECT_TRUE(host.ok()) << host.status();
  if (!host.ok()) return {};
  auto flat = host->flat<int64_t>();
  return {flat.begin(), flat.end()};
}

// An allocator and a staging pool over host memory whose use the tests
// check, with a copy stream the tests may hold shut.
struct HostSetup {
  std::unique_ptr<CachingAllocator> allocator =
      std::move(CachingAllocator::Create(NewHostRegionProvider(), {.name = "test device"})).value();
  PinnedHostPool staging =
      std::move(PinnedHostPool::CreateWithProvider(NewHostRegionProvider())).value();
  std::unique_ptr<Stream> stream = std::move(NewStream(Device::Cpu())).value();

  DeviceIteratorOptions Options(int64_t depth) {
    return {.depth = depth,
            .stream = stream.get(),
            .device_allocator = allocator.get(),
            .staging_pool = staging};
  }
  int64_t staging_blocks() const { return staging.stats().num_allocs - staging.stats().num_frees; }
};

class PrefetchToDeviceTest : public OnEachDevice {};

TEST_P(PrefetchToDeviceTest, BatchesArriveInOrderThenTheEnd) {
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> consumer, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it,
                              PrefetchToDevice(Dataset::range(10).batch(3), device_));
  EXPECT_EQ(it.device(), device_);
  std::vector<std::vector<int64_t>> got;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
    if (!e) break;
    ASSERT_EQ(e->size(), 1u);
    EXPECT_EQ((*e)[0].device(), device_);
    got.push_back(Int64s(*e, 0, *consumer));
  }
  EXPECT_THAT(got, ElementsAre(ElementsAre(0, 1, 2), ElementsAre(3, 4, 5), ElementsAre(6, 7, 8),
                               ElementsAre(9)));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> again, it.Next());
  EXPECT_FALSE(again.has_value());
  PrefetchToDeviceStats s = it.stats();
  EXPECT_EQ(s.batches, 4);
  EXPECT_EQ(s.copies, 4);
  EXPECT_EQ(s.bytes_copied, 10 * 8);
  EXPECT_EQ(s.buffered, 0);
  EXPECT_THAT(s.ToString(), HasSubstr("4 batches, 4 copies"));
}

TEST_P(PrefetchToDeviceTest, KeepsNamesDtypesAndShapes) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor labels, Tensor::FromVector<int64_t>({7, 8, 9, 10}));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Tensor x, Tensor::FromVector<float>(std::vector<float>(4 * 5, 1.5f), Shape{4, 5}));
  Dataset ds = Dataset::from_tensor_slices({labels, x}, {"label", "x"}).batch(2);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it, PrefetchToDevice(ds, device_.ToString()));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
  ASSERT_TRUE(e.has_value());
  EXPECT_THAT(e->names(), ElementsAre("label", "x"));
  ASSERT_NE(e->find("x"), nullptr);
  EXPECT_EQ(e->find("x")->dtype(), DType::kFloat32);
  EXPECT_EQ(e->find("x")->shape(), (Shape{2, 5}));
  EXPECT_EQ(e->find("nope"), nullptr);
  SLUICE_ASSERT_OK(e->Wait());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, CopyToHost(*e->find("x"), *s));
  EXPECT_EQ(back.flat<float>()[9], 1.5f);
  EXPECT_THAT(Int64s(*e, 0, *s), ElementsAre(7, 8));
}

TEST_P(PrefetchToDeviceTest, InputErrorsArriveAfterTheElementsBeforeThem) {
  Dataset ds = Dataset::from_generator([] {
    return GeneratorFn([i = int64_t{0}]() mutable -> Result<std::optional<Element>> {
      if (i == 2) return Status::DataLoss("record 2 is corrupt");
      return std::optional<Element>(Element({Tensor::Scalar<int64_t>(i++)}));
    });
  });
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> consumer, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it, PrefetchToDevice(ds, device_, {.depth = 4}));
  for (int64_t i = 0; i < 2; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
    ASSERT_TRUE(e.has_value());
    EXPECT_THAT(Int64s(*e, 0, *consumer), ElementsAre(i));
  }
  for (int repeat = 0; repeat < 2; ++repeat) {
    Result<std::optional<DeviceElement>> e = it.Next();
    EXPECT_EQ(e.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("record 2 is corrupt"));
  }
}

// The transform runs on each element before staging: it can drop a string
// component (which cannot be copied), and its error takes the element's
// place, after the elements before it.
TEST_P(PrefetchToDeviceTest, TransformPicksComponentsAndItsErrorsArriveInOrder) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor names, Tensor::FromStrings({"a", "b", "c"}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor values, Tensor::FromVector<int64_t>({10, 11, 12}));
  Dataset ds = Dataset::from_tensor_slices({names, values}, {"name", "value"});
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator all, PrefetchToDevice(ds, device_));
    EXPECT_FALSE(all.Next().ok()) << "a string component should not stage";
  }
  DeviceIteratorOptions options;
  options.transform = [](Element e) -> Result<Element> {
    SLUICE_ASSIGN_OR_RETURN(Tensor v, e.get("value"));
    if (v.scalar<int64_t>() == 12) return Status::InvalidArgument("value 12 is not wanted");
    return Element({v}, {"value"});
  };
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> consumer, NewStream(device_));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it, PrefetchToDevice(ds, device_, options));
  for (int64_t want : {10, 11}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
    ASSERT_TRUE(e.has_value());
    EXPECT_THAT(e->names(), ElementsAre("value"));
    EXPECT_THAT(Int64s(*e, 0, *consumer), ElementsAre(want));
  }
  Result<std::optional<DeviceElement>> bad = it.Next();
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("value 12 is not wanted"));
  EXPECT_GE(it.input_stats().stages.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Devices, PrefetchToDeviceTest, ::testing::Values("cpu:0", "gpu:0"),
                         DeviceTestName);

TEST(PrefetchToDeviceHostTest, HandsOutBatchesBeforeTheirCopiesLandAndHoldsDepth) {
  HostSetup setup;
  Gate gate;  // after setup: opened before the stream is destroyed
  SLUICE_ASSERT_OK(gate.Close(*setup.stream));
  std::optional<DeviceIterator> it;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(
        DeviceIterator made,
        PrefetchToDevice(Dataset::range(12).batch(3), Device::Cpu(), setup.Options(/*depth=*/2)));
    it.emplace(std::move(made));
  }
  std::vector<DeviceElement> held;
  for (int i = 0; i < 2; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it->Next());
    ASSERT_TRUE(e.has_value());
    SLUICE_ASSERT_OK_AND_ASSIGN(bool ready, e->ready());
    EXPECT_FALSE(ready);  // Next() did not wait for the copy
    held.push_back(*e);
  }
  // Two batches copying: the worker waits for the oldest before staging a
  // third, and their pinned buffers are still out.
  EXPECT_EQ(setup.staging_blocks(), 2);
  EXPECT_EQ(it->stats().batches, 2);
  gate.Open();
  for (int64_t b = 2; b < 4; ++b) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it->Next());
    ASSERT_TRUE(e.has_value());
    held.push_back(*e);
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> end, it->Next());
  EXPECT_FALSE(end.has_value());
  for (size_t b = 0; b < held.size(); ++b) {
    SLUICE_ASSERT_OK(held[b].Wait());
    const auto* v = static_cast<const int64_t*>(held[b][0].raw_data());  // host memory on cpu:0
    EXPECT_EQ(v[0], static_cast<int64_t>(3 * b));
    EXPECT_EQ(v[2], static_cast<int64_t>(3 * b + 2));
  }
  it.reset();
  EXPECT_EQ(setup.staging_blocks(), 0);
  EXPECT_GT(setup.staging.stats().num_allocs, 0);
  held.clear();
  EXPECT_EQ(setup.allocator->stats().bytes_in_use, 0);
}

TEST(PrefetchToDeviceHostTest, AConsumerStreamWaitsForTheCopyNotTheThread) {
  HostSetup setup;
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> consumer, NewStream(Device::Cpu()));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> consumed, NewEvent(Device::Cpu()));
  Gate gate;
  SLUICE_ASSERT_OK(gate.Close(*setup.stream));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it, PrefetchToDevice(Dataset::range(4).batch(4),
                                                                  Device::Cpu(), setup.Options(1)));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
  ASSERT_TRUE(e.has_value());
  std::vector<int64_t> out(4, -1);
  SLUICE_ASSERT_OK(e->WaitOn(*consumer));
  SLUICE_ASSERT_OK(CopyToHostAsync((*e)[0], out.data(), *consumer));
  SLUICE_ASSERT_OK(consumer->Record(*consumed));
  SLUICE_ASSERT_OK_AND_ASSIGN(bool ready, consumed->Query());
  EXPECT_FALSE(ready);
  gate.Open();
  SLUICE_ASSERT_OK(consumed->Synchronize());
  EXPECT_THAT(out, ElementsAre(0, 1, 2, 3));
}

TEST(PrefetchToDeviceHostTest, StagingErrorsArriveInOrder) {
  HostSetup setup;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor words, Tensor::FromStrings({"a", "b"}));
  // A string component: InvalidArgument naming it.
  Dataset strings = Dataset::from_tensor_slices({words}, {"word"});
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it,
                              PrefetchToDevice(strings, Device::Cpu(), setup.Options(2)));
  Result<std::optional<DeviceElement>> e = it.Next();
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("component 'word'"));

  // Device memory exhausted on the second batch: the first arrives intact.
  auto small =
      std::move(CachingAllocator::Create(NewHostRegionProvider(),
                                         {.name = "small device", .memory_limit = 2 << 20}))
          .value();
  DeviceIteratorOptions options = setup.Options(1);
  options.device_allocator = small.get();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor big, Tensor::Zeros(DType::kFloat32, Shape{2, 300 << 10}));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceIterator oom,
      PrefetchToDevice(Dataset::from_tensor_slices({big}), Device::Cpu(), options));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> first, oom.Next());
  ASSERT_TRUE(first.has_value());  // held: the second cannot fit beside it
  Result<std::optional<DeviceElement>> second = oom.Next();
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("prefetch_to_device(cpu:0): component 0: small device"));
  EXPECT_EQ(oom.Next().status().code(), StatusCode::kResourceExhausted);
}

TEST(PrefetchToDeviceHostTest, DestroyingCancelsAndFreesEverything) {
  HostSetup setup;
  Dataset forever = Dataset::range(1000).batch(10).repeat();
  {  // never read
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it,
                                PrefetchToDevice(forever, Device::Cpu(), setup.Options(3)));
  }
  {  // read a little, queue full behind
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator it,
                                PrefetchToDevice(forever, Device::Cpu(), setup.Options(3)));
    for (int i = 0; i < 5; ++i) SLUICE_ASSERT_OK(it.Next());
  }
  EXPECT_EQ(setup.staging_blocks(), 0);
  EXPECT_EQ(setup.allocator->stats().bytes_in_use, 0);

  // Destroyed while its copies are held shut: the destructor waits for them.
  Gate gate;
  SLUICE_ASSERT_OK(gate.Close(*setup.stream));
  std::optional<DeviceIterator> it;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceIterator made,
                                PrefetchToDevice(forever, Device::Cpu(), setup.Options(2)));
    it.emplace(std::move(made));
  }
  SLUICE_ASSERT_OK(it->Next());
  std::thread destroyer([&] { it.reset(); });
  gate.Open();
  destroyer.join();
  EXPECT_EQ(setup.staging_blocks(), 0);
  EXPECT_EQ(setup.allocator->stats().bytes_in_use, 0);
}

TEST(PrefetchToDeviceHostTest, BadArguments) {
  Dataset ds = Dataset::range(3);
  EXPECT_EQ(PrefetchToDevice(ds, Device::Cpu(), {.depth = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PrefetchToDevice(ds, "/tpu:0").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PrefetchToDevice(Dataset::FromError(Status::NotFound("no files")), Device::Cpu())
                .status()
                .code(),
            StatusCode::kNotFound);
  if (!GpuAvailability().ok()) {
    Result<DeviceIterator> gpu = PrefetchToDevice(ds, "gpu:0");
    EXPECT_EQ(gpu.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(std::string(gpu.status().message()), HasSubstr("gpu:0: "));
  }
}

}  // namespace
}  // namespace sluice::gpu
