// Random image ops: reproducible from a seeded Rng, windows inside the image,
// scale and ratio respected, distributions sane.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "sluice/ops/image_ops.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

constexpr auto kInvalid = StatusCode::kInvalidArgument;

// Element i holds i: the first element of a crop tells where it came from.
Tensor Indexed(const Shape& shape) {
  Tensor t = Tensor::Allocate(DType::kInt32, shape).value();
  auto f = t.flat<int32_t>();
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<int32_t>(i);
  return t;
}

TEST(RandomCropTest, ReproducibleInsideAndUniform) {
  const Tensor img = Indexed({6, 8, 3});
  std::map<int32_t, int> starts;
  for (uint64_t stream = 0; stream < 3000; ++stream) {
    Rng a(7, stream), b(7, stream);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, RandomCrop(img, {4, 5, 3}, a));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor y, RandomCrop(img, {4, 5, 3}, b));
    ASSERT_TRUE(Identical(x, y));
    ASSERT_EQ(x.shape(), (Shape{4, 5, 3}));
    const int32_t first = x.flat<int32_t>()[0];
    const int32_t oy = first / 24, ox = (first % 24) / 3;
    ASSERT_EQ(first % 3, 0);
    ASSERT_LE(oy, 2);
    ASSERT_LE(ox, 3);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor expected, Crop(img, oy, ox, 4, 5));
    ASSERT_TRUE(Identical(x, expected));
    ++starts[first];
  }
  ASSERT_EQ(starts.size(), 12u);  // 3 x 4 offsets, ~250 each
  for (const auto& [start, n] : starts) EXPECT_NEAR(n, 250, 75) << start;
}

TEST(RandomCropTest, AnyRankAndErrors) {
  Rng rng(1);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor v, RandomCrop(Indexed({10}), {10}, rng));
  EXPECT_EQ(v.flat<int32_t>()[9], 9);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor e, RandomCrop(Indexed({4, 5}), {0, 5}, rng));
  EXPECT_EQ(e.num_elements(), 0);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, RandomCrop(Indexed({2, 3, 4, 5, 6}), {1, 3, 2, 5, 6}, rng));
  EXPECT_EQ(b.shape(), (Shape{1, 3, 2, 5, 6}));
  SLUICE_EXPECT_ERROR(RandomCrop(Indexed({4, 5, 3}), {4, 5}, rng), kInvalid, "[4,5,3]");
  SLUICE_EXPECT_ERROR(RandomCrop(Indexed({4, 5, 3}), {5, 5, 3}, rng), kInvalid, "[5,5,3]");
  SLUICE_EXPECT_ERROR(RandomCrop(Indexed({4, 5, 3}), {-1, 5, 3}, rng), kInvalid, "[?,5,3]");
}

// SampleRandomCrop makes RandomCrop's draws: the offsets of the slice
// RandomCrop takes with the same Rng, and the Rng left in the same state.
TEST(RandomCropTest, SampleRandomCropGivesRandomCropsOffsets) {
  const Tensor img = Indexed({6, 8, 3});
  for (uint64_t stream = 0; stream < 200; ++stream) {
    Rng a(3, stream), b(3, stream);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, RandomCrop(img, {4, 5, 3}, a));
    SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> begin,
                                SampleRandomCrop(img.shape(), {4, 5, 3}, b));
    ASSERT_EQ(begin.size(), 3u);
    ASSERT_EQ(begin[2], 0);
    ASSERT_EQ(x.flat<int32_t>()[0], begin[0] * 24 + begin[1] * 3);
    ASSERT_EQ(a.NextU32(), b.NextU32());
  }
  Rng rng(1);
  SLUICE_EXPECT_ERROR(SampleRandomCrop({4, 5, 3}, {5, 5, 3}, rng), kInvalid, "[5,5,3]");
  SLUICE_EXPECT_ERROR(SampleRandomCrop({4, 5, 3}, {4, 5}, rng), kInvalid, "[4,5,3]");
}

TEST(SampleRandomResizedCropTest, WindowsInsideScaleAndRatioRespected) {
  // Square, so that rejected tries do not favour one orientation.
  const int64_t H = 400, W = 400;
  double area_sum = 0, log_ratio_sum = 0;
  const int kN = 4000;
  for (int i = 0; i < kN; ++i) {
    Rng a(42, i), b(42, i);
    SLUICE_ASSERT_OK_AND_ASSIGN(CropWindow w, SampleRandomResizedCrop(H, W, a));
    SLUICE_ASSERT_OK_AND_ASSIGN(CropWindow again, SampleRandomResizedCrop(H, W, b));
    ASSERT_EQ(w, again);
    ASSERT_GE(w.y, 0);
    ASSERT_GE(w.x, 0);
    ASSERT_GT(w.height, 0);
    ASSERT_GT(w.width, 0);
    ASSERT_LE(w.y + w.height, H);
    ASSERT_LE(w.x + w.width, W);
    // Rounding moves each side by at most 0.5 pixel.
    const double area = static_cast<double>(w.height) * w.width / (H * W);
    const double ratio = static_cast<double>(w.width) / w.height;
    const double slack_area = 0.5 * (w.height + w.width + 0.5) / (H * W);
    ASSERT_GE(area, 0.08 - slack_area);
    ASSERT_LE(area, 1.0 + slack_area);
    ASSERT_GE(ratio, 0.75 * (1 - 1.0 / w.height) - 0.5 / w.height);
    ASSERT_LE(ratio, 4.0 / 3.0 * (1 + 1.0 / w.height) + 0.5 / w.height);
    area_sum += area;
    log_ratio_sum += std::log(ratio);
  }
  // Area ~ U(0.08, 1) (mean 0.54), minus the large windows that do not fit.
  EXPECT_GT(area_sum / kN, 0.42);
  EXPECT_LT(area_sum / kN, 0.56);
  EXPECT_NEAR(log_ratio_sum / kN, 0.0, 0.03);  // log ratio ~ U(log 3/4, log 4/3)
}

TEST(SampleRandomResizedCropTest, FallsBackToAClampedCentralCrop) {
  Rng rng(3);
  // Too wide for any tried window: the whole height, width clamped to 4/3.
  SLUICE_ASSERT_OK_AND_ASSIGN(CropWindow w, SampleRandomResizedCrop(10, 1000, rng));
  EXPECT_EQ(w, (CropWindow{0, 493, 10, 13}));
  SLUICE_ASSERT_OK_AND_ASSIGN(w, SampleRandomResizedCrop(1000, 10, rng));
  EXPECT_EQ(w, (CropWindow{493, 0, 13, 10}));
  // Ratio range inside the image's: the whole image.
  SLUICE_ASSERT_OK_AND_ASSIGN(w, SampleRandomResizedCrop(3, 4, rng, {2.0, 3.0}, {1.0, 2.0}));
  EXPECT_EQ(w, (CropWindow{0, 0, 3, 4}));
  SLUICE_ASSERT_OK_AND_ASSIGN(w, SampleRandomResizedCrop(1, 1, rng));
  EXPECT_EQ(w, (CropWindow{0, 0, 1, 1}));
}

TEST(SampleRandomResizedCropTest, Errors) {
  Rng rng(3);
  SLUICE_EXPECT_ERROR(SampleRandomResizedCrop(0, 10, rng), kInvalid, "height 0");
  SLUICE_EXPECT_ERROR(SampleRandomResizedCrop(10, 10, rng, {0.5, 0.1}), kInvalid, "scale");
  SLUICE_EXPECT_ERROR(SampleRandomResizedCrop(10, 10, rng, {0.0, 1.0}), kInvalid, "scale");
  SLUICE_EXPECT_ERROR(SampleRandomResizedCrop(10, 10, rng, {0.1, 1.0}, {-1.0, 1.0}), kInvalid,
                      "ratio");
  SLUICE_EXPECT_ERROR(SampleRandomResizedCrop(10, 10, rng, {0.1, INFINITY}), kInvalid, "finite");
}

TEST(RandomResizedCropTest, EqualsSampleThenCropThenResize) {
  Tensor img = Tensor::Allocate(DType::kUInt8, {60, 80, 3}).value();
  for (size_t i = 0; i < img.flat<uint8_t>().size(); ++i) img.flat<uint8_t>()[i] = (i * 7) % 256;
  for (uint64_t stream = 0; stream < 20; ++stream) {
    for (auto method : {ResizeMethod::kBilinear, ResizeMethod::kNearest, ResizeMethod::kArea}) {
      Rng a(9, stream), b(9, stream);
      const RandomResizedCropOptions o{.method = method, .antialias = stream % 2 == 0};
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, RandomResizedCrop(img, {24, 24}, a, o));
      SLUICE_ASSERT_OK_AND_ASSIGN(CropWindow w, SampleRandomResizedCrop(60, 80, b));
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor crop, Crop(img, w));
      SLUICE_ASSERT_OK_AND_ASSIGN(
          Tensor want, Resize(crop, {24, 24}, {.method = method, .antialias = o.antialias}));
      ASSERT_TRUE(Identical(got, want)) << stream;
    }
  }
  Rng rng(1);
  SLUICE_EXPECT_ERROR(
      RandomResizedCrop(Tensor::Zeros(DType::kUInt8, {2, 6, 6, 3}).value(), {4, 4}, rng), kInvalid,
      "[2,6,6,3]");
  SLUICE_EXPECT_ERROR(RandomResizedCrop(img, {0, 4}, rng), kInvalid, "[0, 4]");
}

TEST(RandomFlipTest, AboutHalfReproducibleAndSharesWhenNotFlipped) {
  const Tensor img = Indexed({4, 5, 2});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor flipped, FlipLeftRight(img));
  int n_flipped = 0;
  const int kN = 4000;
  for (int i = 0; i < kN; ++i) {
    Rng a(5, i), b(5, i);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, RandomFlipLeftRight(img, a));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor y, RandomFlipLeftRight(img, b));
    ASSERT_TRUE(Identical(x, y));
    if (x.raw_data() == img.raw_data()) continue;
    ASSERT_TRUE(Identical(x, flipped));
    ++n_flipped;
  }
  EXPECT_NEAR(n_flipped, kN / 2, 4 * std::sqrt(kN / 4.0));
}

TEST(RandomFlipTest, BatchFlipsEachImageIndependently) {
  const Tensor batch = Indexed({400, 3, 2, 1});
  Rng rng(11);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor out, RandomFlipUpDown(batch, rng));
  int n_flipped = 0;
  for (int64_t b = 0; b < 400; ++b) {
    const Tensor in_b = *batch.Row(b), out_b = *out.Row(b);
    if (Identical(in_b, out_b)) continue;
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor f, FlipUpDown(in_b));
    ASSERT_TRUE(Identical(out_b, f));
    ++n_flipped;
  }
  EXPECT_NEAR(n_flipped, 200, 50);
  SLUICE_EXPECT_ERROR(RandomFlipLeftRight(Indexed({3, 2}), rng), kInvalid, "[3,2]");
}

// With an rvalue the flip and the normalization happen in the image's own
// bytes when nothing else shares them, with the same result; a shared image
// is left alone.
TEST(InPlaceTest, FlipAndNormalizeOwnedImagesInPlace) {
  for (const Shape& shape : std::vector<Shape>{{4, 5, 3}, {3, 6, 1}, {2, 7, 20}, {5, 1, 2}}) {
    for (DType dtype : {DType::kUInt8, DType::kFloat32}) {
      SCOPED_TRACE(shape.ToString() + " " + std::string(DTypeName(dtype)));
      SLUICE_ASSERT_OK_AND_ASSIGN(const Tensor img, Cast(Indexed(shape), dtype));
      for (bool lr : {true, false}) {
        for (int i = 0; i < 8; ++i) {
          Rng a(7, i), b(7, i);
          SLUICE_ASSERT_OK_AND_ASSIGN(Tensor want,
                                      lr ? RandomFlipLeftRight(img, a) : RandomFlipUpDown(img, a));
          Tensor own = *img.Clone();  // a fresh copy: unique bytes
          const void* bytes = own.raw_data();
          SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, lr ? RandomFlipLeftRight(std::move(own), b)
                                                     : RandomFlipUpDown(std::move(own), b));
          EXPECT_EQ(got.raw_data(), bytes);
          ASSERT_TRUE(Identical(got, want));
        }
      }
      // Shared bytes: a copy, the original unchanged.
      Tensor shared = img;
      Rng r(1, 0);
      while (true) {
        Rng probe = r;
        if (probe.UniformFloat() < 0.5f) break;
        r.UniformFloat();
      }
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor flipped, RandomFlipLeftRight(std::move(shared), r));
      EXPECT_NE(flipped.raw_data(), img.raw_data());
      SLUICE_ASSERT_OK_AND_ASSIGN(const Tensor again, Cast(Indexed(shape), dtype));
      EXPECT_TRUE(Identical(img, again));
    }
  }
  const std::vector<float> mean = {1.5f, 2.0f, -3.0f}, sd = {0.5f, 3.0f, 7.0f};
  SLUICE_ASSERT_OK_AND_ASSIGN(const Tensor f, Cast(Indexed({6, 5, 3}), DType::kFloat32));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor want, Normalize(f, mean, sd));
  Tensor own = *f.Clone();
  const void* bytes = own.raw_data();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, Normalize(std::move(own), mean, sd));
  EXPECT_EQ(got.raw_data(), bytes);
  EXPECT_TRUE(Identical(got, want));
  Tensor shared = f;
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor copy, Normalize(std::move(shared), mean, sd));
  EXPECT_NE(copy.raw_data(), f.raw_data());
  EXPECT_TRUE(Identical(copy, want));
}

}  // namespace
}  // namespace sluice::ops
