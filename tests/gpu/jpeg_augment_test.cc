// DecodeRandomResizedCropBatch against ops::DecodeRandomCropResize (unfused)
// on the host device, where the decode is libjpeg-turbo's: equal bytes.
#include "sluice/gpu/jpeg_augment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

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

class JpegAugmentHost : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_ = NewStream(Device::Host()).value();
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
