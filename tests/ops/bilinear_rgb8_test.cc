// The uint8 RGB bilinear path (ops/internal/bilinear_rgb8.*, with its
// AVX-512 VBMI, AVX2 and SSE2 loops) against the generic float path: uint8 values are exact in
// float32, so resizing an image and resizing its float32 cast must give the
// same bits. The generic path is the one checked against TensorFlow's
// goldens for every dtype (resize_test.cc).
#include <gtest/gtest.h>

#include <cstring>

#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/simd.h"
#include "sluice/ops/resize.h"

namespace sluice::ops {
namespace {

Tensor Noise(int64_t h, int64_t w, uint32_t seed) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, 3}).value();
  uint8_t* p = t.flat<uint8_t>().data();
  for (int64_t i = 0; i < h * w * 3; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = static_cast<uint8_t>(seed >> 24);
  }
  return t;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

// The widest loops the CPU has (AVX-512 VBMI where there is), AVX2, SSE2.
enum class Isa { kDefault, kAvx2, kSse2 };

class BilinearRgb8 : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    ops_internal::Avx512DisabledForTesting() = GetParam() != Isa::kDefault;
    ops_internal::Avx2DisabledForTesting() = GetParam() == Isa::kSse2;
  }
  void TearDown() override {
    ops_internal::Avx512DisabledForTesting() = false;
    ops_internal::Avx2DisabledForTesting() = false;
  }
};

TEST_P(BilinearRgb8, EqualsTheFloatPathBitForBit) {
  const int64_t sides[] = {1, 2, 3, 4, 5, 7, 8, 9, 31, 224, 225, 473};
  int cases = 0;
  for (int64_t in_w : sides) {
    for (int64_t out_w :
         {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{6}, int64_t{7}, int64_t{224}, int64_t{500}}) {
      const int64_t in_h = 1 + (in_w * 7) % 13, out_h = 1 + (out_w * 5) % 11;
      const Tensor image = Noise(in_h, in_w, static_cast<uint32_t>(in_w * 1000 + out_w));
      const Tensor as_float = Cast(image, DType::kFloat32).value();
      const Tensor got = Resize(image, {out_h, out_w}).value();
      const Tensor want = Resize(as_float, {out_h, out_w}).value();
      ASSERT_TRUE(SameBits(got, want)) << in_h << "x" << in_w << " -> " << out_h << "x" << out_w;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 84);
}

TEST_P(BilinearRgb8, CropViewsEqualTheFloatPath) {
  // RandomResizedCrop resizes a window of the image in place: rows with a
  // stride wider than the window, and right neighbors past the window's
  // edge that must not be read.
  const Tensor image = Noise(375, 500, 5);
  const Tensor as_float = Cast(image, DType::kFloat32).value();
  for (uint64_t seed = 0; seed < 30; ++seed) {
    Rng a(seed), b(seed);
    const Tensor got = RandomResizedCrop(image, {224, 224}, a).value();
    const Tensor want = RandomResizedCrop(as_float, {224, 224}, b).value();
    ASSERT_TRUE(SameBits(got, want)) << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryLoop, BilinearRgb8,
                         ::testing::Values(Isa::kDefault, Isa::kAvx2, Isa::kSse2),
                         [](const auto& info) {
                           return info.param == Isa::kDefault ? "Default"
                                  : info.param == Isa::kAvx2  ? "Avx2"
                                                              : "Sse2";
                         });

}  // namespace
}  // namespace sluice::ops
