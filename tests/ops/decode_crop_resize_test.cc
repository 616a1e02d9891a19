#include "sluice/ops/decode_crop_resize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "sluice/ops/decode_image.h"
#include "sluice/ops/png.h"

namespace sluice::ops {
namespace {

// A photo-like image: smooth shading, edges and some texture.
Tensor Photo(int64_t h, int64_t w) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, 3}).value();
  uint8_t* p = t.flat<uint8_t>().data();
  uint32_t noise = 12345;
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      noise = noise * 1664525u + 1013904223u;
      const double r = std::hypot(x - 0.6 * w, y - 0.4 * h);
      const int n = static_cast<int>(noise >> 28) - 8;
      p[(y * w + x) * 3 + 0] =
          static_cast<uint8_t>(std::clamp<double>(128 + 100 * std::sin(r / 23.0) + n, 0, 255));
      p[(y * w + x) * 3 + 1] = static_cast<uint8_t>(std::clamp<double>(255.0 * y / h + n, 0, 255));
      p[(y * w + x) * 3 + 2] = static_cast<uint8_t>(((x / 40 + y / 40) % 2) ? 200 + n : 40 + n);
    }
  }
  return t;
}

struct Diff {
  double max = 0, mean = 0;
};
Diff Compare(const Tensor& a, const Tensor& b) {
  Diff d;
  const auto x = a.flat<float>(), y = b.flat<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::abs(double{x[i]} - y[i]);
    d.max = std::max(d.max, e);
    d.mean += e;
  }
  d.mean /= static_cast<double>(x.size());
  return d;
}

// Fused vs unfused over 40 random crops of a photo-like h x w JPEG.
void CheckFusedAgainstUnfused(int64_t h, int64_t w) {
  const std::string jpeg = EncodeJpeg(Photo(h, w), {.quality = 90}).value();
  Tensor image = DecodeImage(jpeg, {.channels = 3}).value();
  Diff worst, worst_aa;
  int scaled = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    DecodeCropResizeOptions o{.size = {224, 224}};
    Rng r1(seed), r2(seed), r3(seed), r4(seed);
    Tensor fused = DecodeRandomCropResize(jpeg, r1, o).value();
    o.fused = false;
    Tensor plain = DecodeRandomCropResize(jpeg, r2, o).value();
    // The unfused reference is exactly RandomResizedCrop of the full decode.
    Tensor rrc = RandomResizedCrop(image, {224, 224}, r3).value();
    ASSERT_EQ(Compare(plain, rrc).max, 0.0);
    const Diff d = Compare(fused, plain);
    worst.max = std::max(worst.max, d.max);
    worst.mean = std::max(worst.mean, d.mean);
    // Against an antialiased resize of the same window (what the DCT
    // scaling approximates).
    CropWindow win = SampleRandomResizedCrop(h, w, r4).value();
    Tensor aa = Resize(Crop(image, win).value(), {224, 224}, {.antialias = true}).value();
    const Diff da = Compare(fused, aa);
    worst_aa.max = std::max(worst_aa.max, da.max);
    worst_aa.mean = std::max(worst_aa.mean, da.mean);
    scaled += FusedScaleDenominator(win, {224, 224}) > 1;
  }
  std::printf(
      "%lldx%lld: fused vs unfused over 40 crops (%d DCT-scaled): max %.1f, worst mean "
      "%.2f levels; vs unfused with antialias: max %.1f, worst mean %.2f\n",
      static_cast<long long>(w), static_cast<long long>(h), scaled, worst.max, worst.mean,
      worst_aa.max, worst_aa.mean);
  // Without DCT scaling the fused path is exact: the cropped decode equals
  // the window of the full decode and the same bilinear resize runs on it.
  if (scaled == 0) {
    EXPECT_EQ(worst.max, 0.0);
  }
  // With it, the 1/d decode averages d x d pixels where the unfused bilinear
  // resize samples 2 x 2 of them (measured here: worst mean 3.8 levels; on
  // Debian's mate-backgrounds photos 3.4 on average, 14.5 for the worst
  // image, docs/ops.md).
  EXPECT_LT(worst.mean, 6.0);
  EXPECT_LT(worst_aa.mean, 6.0);
}

TEST(DecodeCropResize, FusedStaysCloseToTheUnfusedPath) {
  CheckFusedAgainstUnfused(375, 500);    // ImageNet-like: crops rarely allow DCT scaling
  CheckFusedAgainstUnfused(1200, 1600);  // large photos: most crops decode at 1/2..1/8
}

TEST(DecodeCropResize, WindowAtFullScaleMatchesCropAndResize) {
  // A window no bigger than the output: d = 1, only the crop is fused.
  const std::string jpeg = EncodeJpeg(Photo(120, 160), {.quality = 95}).value();
  const CropWindow w{13, 21, 90, 100};
  EXPECT_EQ(FusedScaleDenominator(w, {96, 96}), 1);
  Tensor fused = DecodeCropResize(jpeg, w, {.size = {96, 96}}).value();
  Tensor image = DecodeImage(jpeg, {.channels = 3}).value();
  Tensor ref = Resize(Crop(image, w).value(), {96, 96}).value();
  EXPECT_EQ(Compare(fused, ref).max, 0.0);
}

TEST(DecodeCropResize, PngIsDecodedWholeAndMatches) {
  const std::string png = EncodePng(Photo(50, 70)).value();
  Rng a(7), b(7);
  Tensor got = DecodeRandomCropResize(png, a, {.size = {32, 32}}).value();
  Tensor want = RandomResizedCrop(DecodePng(png).value(), {32, 32}, b).value();
  EXPECT_EQ(Compare(got, want).max, 0.0);
}

TEST(DecodeCropResize, ScaleDenominator) {
  EXPECT_EQ(FusedScaleDenominator({0, 0, 1800, 1800}, {224, 224}), 8);
  EXPECT_EQ(FusedScaleDenominator({0, 0, 1791, 1800}, {224, 224}), 4);
  EXPECT_EQ(FusedScaleDenominator({0, 0, 448, 500}, {224, 224}), 2);
  EXPECT_EQ(FusedScaleDenominator({0, 0, 447, 500}, {224, 224}), 1);
}

TEST(DecodeCropResize, BadInputIsInvalidArgumentNamingTheFile) {
  const std::string jpeg = EncodeJpeg(Photo(40, 40)).value();
  auto bad_window = DecodeCropResize(jpeg, {30, 0, 20, 10}, {.size = {8, 8}, .name = "a.jpg"});
  ASSERT_FALSE(bad_window.ok());
  EXPECT_EQ(bad_window.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_window.status().message().find("a.jpg"), std::string::npos);
  Rng rng(1);
  auto truncated = DecodeRandomCropResize(std::string_view(jpeg).substr(0, 30), rng,
                                          {.size = {8, 8}, .name = "b.jpg"});
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("b.jpg"), std::string::npos);
  auto zero = DecodeRandomCropResize(jpeg, rng, {.size = {0, 8}});
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  auto garbage = DecodeRandomCropResize("not an image", rng, {.name = "c.bin"});
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("c.bin"), std::string::npos);
}

}  // namespace
}  // namespace sluice::ops
