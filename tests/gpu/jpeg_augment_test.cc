// DecodeRandomResizedCropBatch against ops::DecodeRandomCropResize (unfused)
// on the host device, where the decode is libjpeg-turbo's: equal bytes. The
// fused kernel (one launch per batch) against the per-image chain of
// image_ops.h's twins it replaced (Crop, Resize, Flip, then Normalize):
// equal bytes. The two-stream (overlapped) path against the one-stream one.
#include "sluice/ops/cuda/jpeg_augment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sluice/core/float16.h"
#include "sluice/device/physical_devices.h"
#include "sluice/ops/cuda/image_ops.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/jpeg.h"
#include "test_util.h"

namespace sluice::gpu {
namespace {

std::string Jpeg(int64_t w, int64_t h, bool progressive = false) {
  Tensor image = Tensor::Allocate(DType::kUInt8, Shape({h, w, 3})).value();
  auto px = image.flat<uint8_t>();
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 13 + i / 97) % 253);
  ops::EncodeJpegOptions o;
  o.progressive = progressive;
  return ops::EncodeJpeg(image, o).value();
}

// The per-image path RandomResizedCropBatch had before the fused kernel:
// per image Crop, Resize, maybe a flip, a copy into the batch, then one
// Normalize. The reference the fused kernel must equal byte for byte.
Result<DeviceTensor> PerImageChain(std::span<const DeviceTensor> decoded, Rng& rng, Stream& stream,
                                   const JpegAugmentOptions& options) {
  const int64_t n = static_cast<int64_t>(decoded.size());
  const int64_t h = options.size.height, w = options.size.width;
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor batch, AllocateDeviceTensor(stream.device(), DType::kFloat32,
                                                                   Shape({n, h, w, 3}), &stream));
  const size_t row_bytes = static_cast<size_t>(h * w * 3) * sizeof(float);
  for (int64_t i = 0; i < n; ++i) {
    const DeviceTensor& image = decoded[static_cast<size_t>(i)];
    SLUICE_ASSIGN_OR_RETURN(ops::CropWindow window,
                            ops::SampleRandomResizedCrop(image.shape().dim(0), image.shape().dim(1),
                                                         rng, options.scale, options.ratio));
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor x, Crop(image, window, stream));
    SLUICE_ASSIGN_OR_RETURN(x, Resize(x, options.size, stream));
    if (options.mirror == ops::Mirror::kRandom) {
      SLUICE_ASSIGN_OR_RETURN(x, RandomFlipLeftRight(x, rng, stream));
    } else if (options.mirror == ops::Mirror::kAlways) {
      SLUICE_ASSIGN_OR_RETURN(x, FlipLeftRight(x, stream));
    }
    SLUICE_RETURN_IF_ERROR(stream.CopyAsync(static_cast<char*>(batch.raw_data()) + i * row_bytes,
                                            x.raw_data(), row_bytes,
                                            CopyDirection::kDeviceToDevice));
  }
  if (options.mean.empty()) return batch;
  return Normalize(batch, options.mean, options.stddev, stream);
}

// `count` random uint8 [h, w, 3] images of sizes 1..max_side on `stream`.
std::vector<DeviceTensor> RandomImages(int count, int64_t max_side, Stream& stream, uint64_t seed) {
  Rng rng(seed);
  std::vector<DeviceTensor> out;
  for (int i = 0; i < count; ++i) {
    const auto side = static_cast<uint64_t>(max_side);
    const int64_t h = 1 + static_cast<int64_t>(rng.UniformInt(side));
    const int64_t w = 1 + static_cast<int64_t>(rng.UniformInt(side));
    Tensor t = Tensor::Allocate(DType::kUInt8, Shape({h, w, 3})).value();
    for (uint8_t& v : t.flat<uint8_t>()) v = static_cast<uint8_t>(rng.UniformInt(256));
    out.push_back(CopyToDevice(t, stream).value());
  }
  return out;
}

class JpegAugmentHost : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_ = NewStream(Device::Cpu()).value();
    decoder_ = JpegDecoder::Create(*stream_, {.max_batch = 2}).value();
    for (auto [w, h, prog] : {std::tuple{64, 48, false},
                              {61, 47, false},
                              {80, 80, true},
                              {33, 100, false},
                              {120, 40, false}}) {
      bytes_.push_back(Jpeg(w, h, prog));
    }
    for (const std::string& b : bytes_) jpegs_.push_back({b, "img"});
  }
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<JpegDecoder> decoder_;
  std::vector<std::string> bytes_;
  std::vector<EncodedJpeg> jpegs_;
};

TEST_F(JpegAugmentHost, EqualsTheCpuChainRowByRow) {
  for (ops::Mirror mirror : {ops::Mirror::kRandom, ops::Mirror::kNever, ops::Mirror::kAlways}) {
    JpegAugmentOptions o;
    o.size = {24, 32};
    o.mirror = mirror;
    o.mean = {120.f, 110.f, 100.f};
    o.stddev = {60.f, 55.f, 50.f};
    Rng rng(7), cpu_rng(7);
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor batch,
                                DecodeRandomResizedCropBatch(*decoder_, jpegs_, rng, o));
    ASSERT_EQ(batch.shape(), Shape({5, 24, 32, 3}));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost(batch, *stream_));
    ops::DecodeCropResizeOptions c;
    c.size = o.size;
    c.fused = false;
    c.mirror = mirror;
    c.mean = o.mean;
    c.stddev = o.stddev;
    const size_t row = 24 * 32 * 3 * sizeof(float);
    for (size_t i = 0; i < bytes_.size(); ++i) {
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor want, ops::DecodeRandomCropResize(bytes_[i], cpu_rng, c));
      ASSERT_EQ(want.byte_size(), row);
      EXPECT_EQ(
          std::memcmp(static_cast<const char*>(host.raw_data()) + i * row, want.raw_data(), row), 0)
          << "image " << i << " mirror " << static_cast<int>(mirror);
    }
    // Both chains drew the same numbers.
    EXPECT_EQ(rng.UniformFloat(), cpu_rng.UniformFloat());
  }
}

// The fused kernel against the per-image chain on `device`'s stream.
void ExpectFusedEqualsChain(const Device& device) {
  std::unique_ptr<Stream> stream = NewStream(device).value();
  // 300 images: two launches (256 a launch). Sides 1..40 against outputs
  // smaller and larger, so windows are shrunk, enlarged and (1 x 1 images,
  // scale 1) of the output's size.
  const std::vector<DeviceTensor> images = RandomImages(300, 40, *stream, 5);
  struct Case {
    ops::ImageSize size;
    ops::Mirror mirror;
    std::vector<float> mean, stddev;
    std::array<double, 2> scale = {0.08, 1.0};
  };
  const std::vector<Case> cases = {
      {{9, 7}, ops::Mirror::kRandom, {120.f, 110.f, 100.f}, {60.f, 55.f, 0.5f}},
      {{16, 24}, ops::Mirror::kNever, {}, {}},
      {{5, 5}, ops::Mirror::kAlways, {127.5f}, {-3.f}},
      {{1, 1}, ops::Mirror::kRandom, {}, {}, {1.0, 1.0}},
      {{33, 2}, ops::Mirror::kRandom, {0.f, 1.f, 2.f}, {1.f}},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    JpegAugmentOptions o;
    o.size = c.size;
    o.mirror = c.mirror;
    o.mean = c.mean;
    o.stddev = c.stddev;
    o.scale = c.scale;
    Rng rng(11 + k), ref_rng(11 + k);
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor got, RandomResizedCropBatch(images, rng, *stream, o));
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor want, PerImageChain(images, ref_rng, *stream, o));
    ASSERT_EQ(got.shape(), want.shape());
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor g, CopyToHost(got, *stream));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor w, CopyToHost(want, *stream));
    const size_t row = g.byte_size() / images.size();
    for (size_t i = 0; i < images.size(); ++i) {
      ASSERT_EQ(std::memcmp(static_cast<const char*>(g.raw_data()) + i * row,
                            static_cast<const char*>(w.raw_data()) + i * row, row),
                0)
          << "case " << k << " image " << i << " " << images[i].DebugString();
    }
    EXPECT_EQ(rng.UniformFloat(), ref_rng.UniformFloat()) << "case " << k;
  }
}

TEST(FusedCropResize, EqualsThePerImageChainByteForByte) { ExpectFusedEqualsChain(Device::Cpu()); }

// On a GPU: the kernel (its ~10 KB __grid_constant__ argument) against the
// GPU twins' chain, and the two-stream path against the one-stream one.
TEST(FusedCropResizeGpu, EqualsThePerImageChainAndTwoStreamsEqualOne) {
  if (Status s = GpuAvailability(); !s.ok()) GTEST_SKIP() << s;
  ExpectFusedEqualsChain(Device::Gpu(0));
  std::unique_ptr<Stream> producer = NewStream(Device::Gpu(0)).value();
  std::unique_ptr<Stream> consumer = NewStream(Device::Gpu(0)).value();
  JpegAugmentOptions o;
  o.mean = {120.f, 110.f, 100.f};
  o.stddev = {60.f, 55.f, 50.f};
  Rng rng(4), one_rng(4);
  DeviceTensor two;
  {
    // Dropped right after queuing: RecordUse keeps their memory until read.
    const std::vector<DeviceTensor> images = RandomImages(40, 300, *producer, 2);
    SLUICE_ASSERT_OK_AND_ASSIGN(two,
                                RandomResizedCropBatchAfter(images, rng, *producer, *consumer, o));
  }
  const std::vector<DeviceTensor> images = RandomImages(40, 300, *producer, 2);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor one,
                              RandomResizedCropBatch(images, one_rng, *producer, o));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, CopyToHost(two, *consumer));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, CopyToHost(one, *producer));
  ASSERT_EQ(a.byte_size(), b.byte_size());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()), 0);
}

// dtype = bfloat16: the float32 batch rounded to nearest even, value by value.
TEST(FusedCropResize, Bfloat16IsTheFloat32BatchRounded) {
  std::unique_ptr<Stream> stream = NewStream(Device::Cpu()).value();
  const std::vector<DeviceTensor> images = RandomImages(20, 30, *stream, 8);
  JpegAugmentOptions o;
  o.size = {12, 10};
  o.mean = {120.f, 110.f, 100.f};
  o.stddev = {60.f, 55.f, 50.f};
  Rng rng(3), f32_rng(3);
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor f32,
                              RandomResizedCropBatch(images, f32_rng, *stream, o));
  o.dtype = DType::kBFloat16;
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor bf, RandomResizedCropBatch(images, rng, *stream, o));
  ASSERT_EQ(bf.dtype(), DType::kBFloat16);
  ASSERT_EQ(bf.shape(), f32.shape());
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor want, CopyToHost(f32, *stream));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, CopyToHost(bf, *stream));
  auto w = want.flat<float>();
  auto g = got.flat<bfloat16>();
  ASSERT_EQ(w.size(), g.size());
  size_t inexact = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(g[i].bits, bfloat16(w[i]).bits) << i;
    inexact += static_cast<float>(g[i]) != w[i];
  }
  EXPECT_GT(inexact, 0u);  // the values were rounded, not all exact already
  o.dtype = DType::kInt32;
  EXPECT_EQ(RandomResizedCropBatch(images, rng, *stream, o).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(FusedCropResize, RejectsWhatThePerImageChainRejected) {
  std::unique_ptr<Stream> stream = NewStream(Device::Cpu()).value();
  const std::vector<DeviceTensor> images = RandomImages(2, 8, *stream, 1);
  Rng rng(1);
  JpegAugmentOptions o;
  o.mean = {1.f, 2.f};
  o.stddev = {1.f, 2.f};
  EXPECT_EQ(RandomResizedCropBatch(images, rng, *stream, o).status().code(),
            StatusCode::kInvalidArgument);
  o.mean = {1.f};
  o.stddev = {0.f};
  EXPECT_EQ(RandomResizedCropBatch(images, rng, *stream, o).status().code(),
            StatusCode::kInvalidArgument);
  o = {};
  o.size = {0, 4};
  EXPECT_EQ(RandomResizedCropBatch(images, rng, *stream, o).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<DeviceTensor> floats = {
      CopyToDevice(Tensor::Zeros(DType::kFloat32, Shape({4, 4, 3})).value(), *stream).value()};
  Result<DeviceTensor> r = RandomResizedCropBatch(floats, rng, *stream, {});
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("image 0"));
}

// Decode on the decoder's stream, augment on another: the same bytes as
// one stream, and the decoded images may be dropped while queued.
TEST_F(JpegAugmentHost, AugmentStreamGivesTheSameBatch) {
  std::unique_ptr<Stream> augment = NewStream(Device::Cpu()).value();
  JpegAugmentOptions o;
  o.size = {20, 18};
  o.mean = {120.f, 110.f, 100.f};
  o.stddev = {60.f, 55.f, 50.f};
  for (int round = 0; round < 3; ++round) {
    Rng rng(round), one_rng(round);
    SLUICE_ASSERT_OK_AND_ASSIGN(
        DeviceTensor two, DecodeRandomResizedCropBatch(*decoder_, jpegs_, rng, o, augment.get()));
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor one,
                                DecodeRandomResizedCropBatch(*decoder_, jpegs_, one_rng, o));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, CopyToHost(two, *augment));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, CopyToHost(one, *stream_));
    ASSERT_EQ(a.byte_size(), b.byte_size());
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()), 0) << "round " << round;
  }
  // A stream of another device is refused (where there is a GPU).
  Rng rng(0);
  if (Result<std::unique_ptr<Stream>> s = NewStream(Device::Gpu(0)); s.ok()) {
    EXPECT_EQ(DecodeRandomResizedCropBatch(*decoder_, jpegs_, rng, o, s->get()).status().code(),
              StatusCode::kInvalidArgument);
  }
}

TEST_F(JpegAugmentHost, ErrorsNameTheImage) {
  const std::string bad = "\xff\xd8 not really";
  std::vector<EncodedJpeg> jpegs = jpegs_;
  jpegs.push_back({bad, "train-3 record 9"});
  Rng rng(1);
  Result<DeviceTensor> r = DecodeRandomResizedCropBatch(*decoder_, jpegs, rng);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("train-3 record 9"));
  EXPECT_EQ(DecodeRandomResizedCropBatch(*decoder_, {}, rng).status().code(),
            StatusCode::kInvalidArgument);
  JpegAugmentOptions o;
  o.mean = {1.f};
  EXPECT_EQ(DecodeRandomResizedCropBatch(*decoder_, jpegs_, rng, o).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::gpu
