// The JPEG batches stage on the host device: each batch equals the CPU
// chain (ops::DecodeRandomCropResize, unfused, Rng(seed, batch)), labels
// follow their images, bad images fail or are skipped with their rows; all
// of it through JpegBatchesToDevice with 1 (prefetch 0) and 2 batches made
// ahead. DecodeJpegBatchesToDevice passes the shared conformance suite
// (elements, save/restore at every position, determinism, cancellation,
// errors) over in-memory JPEGs and over a TFRecord file (the JPEGs views
// into its read buffers); a restored iterator yields the batches of an
// uninterrupted one byte for byte, each with its batch index's crops.
#include "sluice/pipeline/cuda/jpeg_batches.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"
#include "sluice/device/physical_devices.h"
#include "sluice/ops/jpeg.h"
#include "sluice/pipeline/iterator.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice::gpu {
namespace {

std::string Jpeg(int64_t w, int64_t h) {
  Tensor image = Tensor::Allocate(DType::kUInt8, Shape({h, w, 3})).value();
  auto px = image.flat<uint8_t>();
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 11 + i / 61) % 255);
  return ops::EncodeJpeg(image).value();
}

class JpegBatchesHost : public ::testing::TestWithParam<int> {  // options.prefetch
 protected:
  void SetUp() override {
    options_.prefetch = GetParam();
    bytes_ = {Jpeg(64, 48), Jpeg(40, 56), "\xff\xd8 broken", Jpeg(72, 72), Jpeg(50, 30)};
    std::vector<std::string_view> views(bytes_.begin(), bytes_.end());
    Tensor images = Tensor::FromStrings(views, Shape({5})).value();
    Tensor labels = Tensor::FromVector(std::vector<int64_t>{10, 11, 12, 13, 14}).value();
    ds_ = Dataset::from_tensor_slices({images, labels}, {"image", "label"}).batch(2);
    options_.augment.size = {16, 20};
    options_.augment.mean = {127.f};
    options_.augment.stddev = {64.f};
    options_.seed = 5;
  }
  // The CPU chain's row for image i of batch b (drawing from `rng`).
  Tensor Want(size_t i, Rng& rng) {
    ops::DecodeCropResizeOptions c;
    c.size = options_.augment.size;
    c.fused = false;
    c.mirror = ops::Mirror::kRandom;
    c.mean = options_.augment.mean;
    c.stddev = options_.augment.stddev;
    return ops::DecodeRandomCropResize(bytes_[i], rng, c).value();
  }
  std::vector<std::string> bytes_;
  Dataset ds_ = Dataset::range(0);
  JpegBatchesOptions options_;
};

TEST_P(JpegBatchesHost, BatchesEqualTheCpuChainAndABadImageFailsItsBatch) {
  SLUICE_ASSERT_OK_AND_ASSIGN(JpegBatchIterator it,
                              JpegBatchesToDevice(ds_, Device::Cpu(), options_));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> first, it.Next());
  ASSERT_TRUE(first.has_value());
  SLUICE_ASSERT_OK(first->Wait());
  EXPECT_THAT(first->names(), ::testing::ElementsAre("image", "label"));
  ASSERT_EQ((*first)[0].shape(), Shape({2, 16, 20, 3}));
  auto stream = NewStream(Device::Cpu()).value();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, CopyToHost((*first)[0], *stream));
  Rng rng(5, 0);
  const size_t row = 16 * 20 * 3 * sizeof(float);
  for (size_t i = 0; i < 2; ++i) {
    Tensor want = Want(i, rng);
    EXPECT_EQ(std::memcmp(static_cast<const char*>(x.raw_data()) + i * row, want.raw_data(), row),
              0)
        << i;
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor labels, CopyToHost((*first)[1], *stream));
  EXPECT_THAT(labels.flat<int64_t>(), ::testing::ElementsAre(10, 11));
  Result<std::optional<DeviceElement>> second = it.Next();
  EXPECT_THAT(std::string(second.status().message()),
              ::testing::HasSubstr("image of batch 1, image 0"));
}

// Decode (the stage's decode stream) and augmentation (its output stream)
// of several batches in flight at once, nothing waited for until the end:
// every batch still equals the CPU chain (the decoded images outlive the
// augmentation that reads them).
TEST_P(JpegBatchesHost, BatchesInFlightEqualTheCpuChain) {
  const std::vector<size_t> good = {0, 1, 3, 4};
  std::vector<std::string_view> views;
  for (size_t i : good) views.push_back(bytes_[i]);
  Tensor images = Tensor::FromStrings(views, Shape({4})).value();
  Dataset ds = Dataset::from_tensor_slices({images}, {"image"}).repeat(3).batch(3);
  SLUICE_ASSERT_OK_AND_ASSIGN(JpegBatchIterator it,
                              JpegBatchesToDevice(ds, Device::Cpu(), options_));
  std::vector<DeviceElement> batches;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
    if (!e) break;
    batches.push_back(*std::move(e));
  }
  ASSERT_EQ(batches.size(), 4u);
  auto stream = NewStream(Device::Cpu()).value();
  const size_t row = 16 * 20 * 3 * sizeof(float);
  size_t image = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    SLUICE_ASSERT_OK(batches[b].Wait());
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, CopyToHost(batches[b][0], *stream));
    ASSERT_EQ(x.byte_size(), 3 * row);
    Rng rng(5, b);
    for (size_t i = 0; i < 3; ++i, ++image) {
      Tensor want = Want(good[image % good.size()], rng);
      EXPECT_EQ(std::memcmp(static_cast<const char*>(x.raw_data()) + i * row, want.raw_data(), row),
                0)
          << "batch " << b << " image " << i;
    }
  }
}

// The stage's times: an input that takes 20 ms per batch shows as input
// time; the decode and the augmentation as theirs.
TEST_P(JpegBatchesHost, StageTimesSayWhereItsThreadSpentTheTime) {
  const std::vector<size_t> good = {0, 1, 3, 4};
  std::vector<std::string_view> views;
  for (size_t i : good) views.push_back(bytes_[i]);
  Tensor images = Tensor::FromStrings(views, Shape({4})).value();
  Dataset ds =
      Dataset::from_tensor_slices({images}, {"image"}).repeat(2).batch(2).map([](Element e) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return e;
      });
  SLUICE_ASSERT_OK_AND_ASSIGN(JpegBatchIterator it,
                              JpegBatchesToDevice(ds, Device::Cpu(), options_));
  const auto t0 = std::chrono::steady_clock::now();
  int n = 0;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
    if (!e) break;
    SLUICE_ASSERT_OK(e->Wait());
    ++n;
  }
  const int64_t wall =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(n, 4);
  const JpegStageTimes t = it.stage_times();
  EXPECT_EQ(t.batches, 4);
  EXPECT_GE(t.input_ns, 4 * 20'000'000);  // the end's call waits for nothing
  EXPECT_GT(t.decode_ns, 0);
  EXPECT_GT(t.augment_ns, 0);
  EXPECT_LE(t.input_ns + t.decode_ns + t.augment_ns, wall);
}

TEST_P(JpegBatchesHost, SkipBadImagesDropsTheirRows) {
  options_.skip_bad_images = true;
  SLUICE_ASSERT_OK_AND_ASSIGN(JpegBatchIterator it,
                              JpegBatchesToDevice(ds_, Device::Cpu(), options_));
  auto stream = NewStream(Device::Cpu()).value();
  std::vector<int64_t> labels;
  std::vector<int64_t> sizes;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
    if (!e) break;
    SLUICE_ASSERT_OK(e->Wait());  // another stream reads it
    sizes.push_back((*e)[0].shape().dim(0));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor l, CopyToHost((*e)[1], *stream));
    for (int64_t v : l.flat<int64_t>()) labels.push_back(v);
  }
  EXPECT_THAT(sizes, ::testing::ElementsAre(2, 1, 1));
  EXPECT_THAT(labels, ::testing::ElementsAre(10, 11, 13, 14));
  EXPECT_EQ(it.skipped_images(), 1);
}

TEST_P(JpegBatchesHost, AMissingImageComponentIsNamed) {
  options_.image = "jpeg";
  SLUICE_ASSERT_OK_AND_ASSIGN(JpegBatchIterator it,
                              JpegBatchesToDevice(ds_, Device::Cpu(), options_));
  Result<std::optional<DeviceElement>> r = it.Next();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("\"jpeg\""));
}

// The image component of every batch (restored from `state` if given; the
// state after `skip` batches saved to `saved` if given).
std::vector<Tensor> ImagesOf(const Dataset& ds, int skip, const std::string* state,
                             std::string* saved) {
  Iterator it = ds.iterator().value();
  if (state != nullptr) {
    EXPECT_TRUE(it.restore(*state).ok());
  }
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    if (saved != nullptr && i == skip) *saved = it.save().value();
    Result<std::optional<Element>> e = it.next();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !e->has_value()) break;
    EXPECT_EQ((**e)[0].device(), Device::Cpu());
    out.push_back((**e)[0]);
  }
  return out;
}

// Saved after `skip` batches (others in flight), restored into a fresh
// iterator: the rest, byte for byte those of an uninterrupted run, and
// batch b drawn from Rng(seed, b).
TEST_P(JpegBatchesHost, ARestoredIteratorYieldsTheSameBatches) {
  const std::vector<size_t> good = {0, 1, 3, 4};
  std::vector<std::string_view> views;
  for (size_t i : good) views.push_back(bytes_[i]);
  Tensor images = Tensor::FromStrings(views, Shape({4})).value();
  const Dataset ds = DecodeJpegBatchesToDevice(
      Dataset::from_tensor_slices({images}, {"image"}).repeat(3).batch(3), Device::Cpu(), options_);
  const std::vector<Tensor> all = ImagesOf(ds, 0, nullptr, nullptr);
  ASSERT_EQ(all.size(), 4u);
  const size_t row = 16 * 20 * 3 * sizeof(float);
  for (int skip : {1, 2, 3}) {
    std::string state;
    ImagesOf(ds, skip, nullptr, &state);
    const std::vector<Tensor> rest = ImagesOf(ds, 0, &state, nullptr);
    ASSERT_EQ(rest.size(), all.size() - static_cast<size_t>(skip)) << skip;
    for (size_t j = 0; j < rest.size(); ++j) {
      const size_t b = j + static_cast<size_t>(skip);
      ASSERT_EQ(rest[j].byte_size(), all[b].byte_size());
      EXPECT_EQ(std::memcmp(rest[j].raw_data(), all[b].raw_data(), all[b].byte_size()), 0)
          << "saved after " << skip << ", batch " << b;
      Rng rng(5, b);
      for (size_t i = 0; i < 3; ++i) {
        Tensor want = Want(good[(3 * b + i) % good.size()], rng);
        EXPECT_EQ(std::memcmp(static_cast<const char*>(rest[j].raw_data()) + i * row,
                              want.raw_data(), row),
                  0)
            << "saved after " << skip << ", batch " << b << " image " << i;
      }
    }
  }
}

// The stage's spec, where its elements live, its stats.
TEST_P(JpegBatchesHost, TheStageSaysWhatItMakes) {
  options_.skip_bad_images = true;
  options_.stats = std::make_shared<JpegBatchesStats>();
  const Dataset ds = DecodeJpegBatchesToDevice(ds_, Device::Cpu(), options_);
  EXPECT_EQ(ds.element_spec().DebugString(), "(image: float32[?,16,20,3], label: int64[?])");
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);  // a batch may be dropped
  EXPECT_EQ(DecodeJpegBatchesToDevice(ds_, Device::Cpu(), {}).cardinality(), 3);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  int n = 0;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, it.next());
    if (!e) break;
    ++n;
    EXPECT_EQ((*e)[0].device(), Device::Cpu());
    EXPECT_EQ((*e)[1].device(), Device::Cpu());
    EXPECT_NE((*e)[0].buffer().device_uses(), nullptr);  // the runtime's block
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(options_.stats->skipped_images(), 1);
  EXPECT_EQ(options_.stats->stage_times().batches, 3);
  const JpegDecodeStats d = options_.stats->decoder_stats();
  EXPECT_EQ(d.hardware + d.gpu_hybrid + d.cpu, 4);
  bool found = false;
  for (const StageStats& st : it.stats().stages) {
    if (st.name != "jpeg_batches_to_device") continue;
    found = true;
    EXPECT_EQ(st.elements, 3);
  }
  EXPECT_TRUE(found) << it.stats().ToString();
}

TEST_P(JpegBatchesHost, TheStagesErrorsAreNamed) {
  auto message = [](const Dataset& ds) {
    Result<Iterator> it = ds.iterator();
    if (!it.ok()) return it.status().ToString();
    while (true) {
      Result<std::optional<Element>> e = it->next();
      if (!e.ok()) return e.status().ToString();
      if (!e->has_value()) return std::string("ok");
    }
  };
  JpegBatchesOptions o = options_;
  o.image = "jpeg";
  std::string m = message(DecodeJpegBatchesToDevice(ds_, Device::Cpu(), o));
  EXPECT_THAT(m, ::testing::HasSubstr("jpeg_batches_to_device(cpu:0)"));
  EXPECT_THAT(m, ::testing::HasSubstr("no component \"jpeg\""));
  m = message(DecodeJpegBatchesToDevice(ds_, Device::Cpu(), options_));  // batch 1 has the bad one
  EXPECT_THAT(m, ::testing::HasSubstr("image of batch 1, image 0"));
  o = options_;
  o.prefetch = -1;
  EXPECT_THAT(message(DecodeJpegBatchesToDevice(ds_, Device::Cpu(), o)),
              ::testing::HasSubstr("prefetch must be >= 0"));
  const Dataset strings = Dataset::from_tensor_slices(
      {*Tensor::FromStrings(std::vector<std::string>{bytes_[0], bytes_[1]}),
       *Tensor::FromStrings(std::vector<std::string>{"a", "b"})},
      {"image", "name"});
  EXPECT_THAT(message(DecodeJpegBatchesToDevice(strings.batch(2), Device::Cpu(), options_)),
              ::testing::HasSubstr("component \"name\" is a string tensor"));
  if (!GpuAvailability().ok()) {
    m = message(DecodeJpegBatchesToDevice(ds_, Device::Gpu(0), options_));
    EXPECT_THAT(m, ::testing::HasSubstr("jpeg_batches_to_device(gpu:0)"));
  }
}

INSTANTIATE_TEST_SUITE_P(Prefetch, JpegBatchesHost, ::testing::Values(0, 2),
                         [](const auto& info) { return "Prefetch" + std::to_string(info.param); });

// A prefetching stage over endless input stops when destroyed (its thread
// joined after the batch it is making), with batches still queued.
TEST(JpegBatchesPrefetch, DestroyedWhileMakingBatchesAhead) {
  Tensor image = Tensor::Allocate(DType::kUInt8, Shape({24, 32, 3})).value();
  std::string bytes = ops::EncodeJpeg(image).value();
  std::vector<std::string_view> views = {bytes, bytes};
  Dataset ds =
      Dataset::from_tensor_slices({Tensor::FromStrings(views, Shape({2})).value()}, {"image"})
          .repeat()
          .batch(2);
  JpegBatchesOptions o;
  o.augment.size = {8, 8};
  o.prefetch = 3;
  for (int consumed : {0, 1, 5}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(JpegBatchIterator it, JpegBatchesToDevice(ds, Device::Cpu(), o));
    for (int i = 0; i < consumed; ++i) {
      SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<DeviceElement> e, it.Next());
      ASSERT_TRUE(e.has_value());
      SLUICE_ASSERT_OK(e->Wait());
      // Read while the stage's thread makes more (TSan checks the hand-over).
      const JpegDecodeStats st = it.decoder_stats();
      EXPECT_GE(st.hardware + st.gpu_hybrid + st.cpu, 2 * (i + 1));
      EXPECT_EQ(it.skipped_images(), 0);
    }
  }  // each iterator destroyed here, its thread mid-batch or waiting for room
  o.prefetch = -1;
  EXPECT_EQ(JpegBatchesToDevice(ds, Device::Cpu(), o).status().code(),
            StatusCode::kInvalidArgument);
}

using sluice::testing::RunConformance;

std::vector<std::string> Jpegs(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(Jpeg(20 + 3 * i, 16 + 2 * (i % 5)));
  return out;
}

JpegBatchesOptions SmallBatches(int prefetch) {
  JpegBatchesOptions o;
  o.augment.size = {8, 10};
  o.augment.mean = {127.f};
  o.augment.stddev = {64.f};
  o.seed = 9;
  o.prefetch = prefetch;
  return o;
}

TEST(JpegBatchesStage, ConformanceOverAPositionalInput) {
  std::vector<std::string> jpegs = Jpegs(14);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < 14; ++i) labels.push_back(100 + i);
  auto make = [&](int p, bool broken) {
    std::vector<std::string> bytes = jpegs;
    if (broken) bytes[4] = "\xff\xd8 broken";
    return DecodeJpegBatchesToDevice(
        Dataset::from_tensor_slices({*Tensor::FromStrings(bytes), *Tensor::FromVector(labels)},
                                    {"image", "label"})
            .map([](Element e) { return e; }, {.parallelism = p})
            .batch(3),
        Device::Cpu(), SmallBatches(2));
  };
  RunConformance({.name = "jpeg_batches_to_device",
                  .make = [&](int p) { return make(p, false); },
                  .make_failing = [&] { return make(1, true); },
                  .error_substring = "image of batch 1, image 1"});
}

// The input's JPEGs are views into the TFRecord reader's buffers; a save
// writes their bytes.
TEST(JpegBatchesStage, ConformanceOverTFRecordViews) {
  sluice::testing::ScratchDir dir;
  const std::string file = dir.file("jpegs.tfrecord");
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(file));
    for (const std::string& j : Jpegs(11)) SLUICE_ASSERT_OK(w.Write(j));
    SLUICE_ASSERT_OK(w.Close());
  }
  JpegBatchesOptions o = SmallBatches(3);
  o.image = "";  // TFRecordDataset's one component
  RunConformance({.name = "jpeg_batches_to_device(TFRecordDataset.batch)", .make = [&](int) {
                    return DecodeJpegBatchesToDevice(TFRecordDataset({file}).batch(4),
                                                     Device::Cpu(), o);
                  }});
}

}  // namespace
}  // namespace sluice::gpu
