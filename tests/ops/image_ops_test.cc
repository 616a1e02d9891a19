// Deterministic image ops against TensorFlow's golden outputs, and their
// argument checks. Random ops: random_image_ops_test.cc.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "image_golden.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/row_ops.h"
#include "sluice/ops/internal/simd.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using image_golden::ImageGolden;
using image_golden::MaxAbs;
using image_golden::MaxAbsDiff;
constexpr auto kInvalid = StatusCode::kInvalidArgument;

Tensor Iota(DType dtype, const Shape& shape) {
  Tensor t = Tensor::Allocate(dtype, shape).value();
  VisitDType(dtype, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, std::string_view>) {
      auto f = t.flat<T>();
      for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<T>(static_cast<float>(i % 200));
    }
  });
  return t;
}

void ExpectIdentical(const Tensor& got, const Tensor& want) {
  EXPECT_TRUE(Identical(got, want))
      << "got  " << got.DebugString(30) << "\nwant " << want.DebugString(30);
}

// TF converts out-of-range floats to uint8 by position: its vectorized loop
// saturates, the scalar code for a tensor's last elements wraps. sluice
// saturates everywhere (see Cast in image_ops.h), so where the two differ
// the input (times `scale`) must be outside [0, 256) and ours saturated.
void ExpectMatchesUpToUint8Wrap(const Tensor& input, double scale, const Tensor& got,
                                const Tensor& want) {
  ASSERT_EQ(got.dtype(), DType::kUInt8);
  ASSERT_EQ(got.shape(), want.shape());
  int wrapped = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const uint8_t g = got.flat<uint8_t>()[i], w = want.flat<uint8_t>()[i];
    if (g == w) continue;
    const double v = image_golden::ElementAsDouble(input, i) * scale;
    EXPECT_FALSE(v >= 0 && v < 256) << "element " << i << " input " << v;
    EXPECT_TRUE(g == 0 || g == 255) << "element " << i;
    ++wrapped;
  }
  EXPECT_LE(wrapped, 8);  // only the scalar tail of TF's loop
}

TEST(CropGolden, MatchesCropToBoundingBox) {
  const ImageGolden& g = ImageGolden::Get();
  for (const auto& c : g.Cases("crop")) {  // crop INPUT Y X H W OUTPUT
    SCOPED_TRACE(c[6]);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, Crop(g.tensor(c[1]), std::stoll(c[2]), std::stoll(c[3]),
                                                 std::stoll(c[4]), std::stoll(c[5])));
    ExpectIdentical(got, g.tensor(c[6]));
  }
}

TEST(CentralCropGolden, MatchesCentralCrop) {
  const ImageGolden& g = ImageGolden::Get();
  const auto cases = g.Cases("central_crop");
  ASSERT_GE(cases.size(), 7u);
  for (const auto& c : cases) {  // central_crop INPUT FRACTION OUTPUT
    SCOPED_TRACE(c[3]);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, CentralCrop(g.tensor(c[1]), std::stod(c[2])));
    ExpectIdentical(got, g.tensor(c[3]));
  }
}

TEST(Rot90Golden, MatchesRot90) {
  const ImageGolden& g = ImageGolden::Get();
  for (const auto& c : g.Cases("rot90")) {  // rot90 INPUT K OUTPUT
    SCOPED_TRACE(c[3]);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, Rot90(g.tensor(c[1]), std::stoll(c[2])));
    ExpectIdentical(got, g.tensor(c[3]));
  }
}

TEST(FlipGolden, MatchesFlips) {
  const ImageGolden& g = ImageGolden::Get();
  for (const char* kind : {"flip_left_right", "flip_up_down"}) {
    const auto cases = g.Cases(kind);
    ASSERT_EQ(cases.size(), 2u);
    for (const auto& c : cases) {
      SCOPED_TRACE(c[2]);
      const Tensor& in = g.tensor(c[1]);
      const bool lr = std::string(kind) == "flip_left_right";
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, lr ? FlipLeftRight(in) : FlipUpDown(in));
      ExpectIdentical(got, g.tensor(c[2]));
      Tensor into = Tensor::Allocate(in.dtype(), in.shape()).value();
      SLUICE_ASSERT_OK(lr ? FlipLeftRightInto(in, &into) : FlipUpDownInto(in, &into));
      ExpectIdentical(into, g.tensor(c[2]));
    }
  }
}

TEST(ConvertImageDtypeGolden, MatchesConvertImageDtype) {
  const ImageGolden& g = ImageGolden::Get();
  const auto cases = g.Cases("convert");
  ASSERT_GE(cases.size(), 30u);
  for (const auto& c : cases) {  // convert INPUT DTYPE SATURATE OUTPUT
    SCOPED_TRACE(c[4]);
    SLUICE_ASSERT_OK_AND_ASSIGN(
        Tensor got, ConvertImageDtype(g.tensor(c[1]), DTypeFromName(c[2]).value(), c[3] == "1"));
    const Tensor& want = g.tensor(c[4]);
    // TF saturates float -> int32 at 2147483520 (the largest float below
    // 2^31); sluice at 2147483647 (documented). Everything else is exact.
    if (c[1] == "f32_convert" && c[2] == "int32" && c[3] == "1") {
      ASSERT_EQ(got.shape(), want.shape());
      for (int64_t i = 0; i < got.num_elements(); ++i) {
        const int32_t w = want.flat<int32_t>()[i];
        EXPECT_EQ(got.flat<int32_t>()[i], w == 2147483520 ? 2147483647 : w) << i;
      }
      continue;
    }
    const DType in_dtype = g.tensor(c[1]).dtype();
    if (c[2] == "uint8" && c[3] == "0" &&
        (in_dtype == DType::kFloat32 || in_dtype == DType::kFloat64)) {
      ExpectMatchesUpToUint8Wrap(g.tensor(c[1]), 255.5, got, want);
      continue;
    }
    ExpectIdentical(got, want);
  }
}

TEST(CastGolden, MatchesTfCast) {
  const ImageGolden& g = ImageGolden::Get();
  for (const auto& c : g.Cases("cast")) {  // cast INPUT DTYPE OUTPUT
    SCOPED_TRACE(c[3]);
    const Tensor& in = g.tensor(c[1]);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, Cast(in, DTypeFromName(c[2]).value()));
    Tensor into = Tensor::Allocate(got.dtype(), got.shape()).value();
    SLUICE_ASSERT_OK(CastInto(in, &into));
    ExpectIdentical(into, got);
    if (c[2] == "uint8" && in.dtype() == DType::kFloat32) {
      ExpectMatchesUpToUint8Wrap(in, 1.0, got, g.tensor(c[3]));
    } else {
      ExpectIdentical(got, g.tensor(c[3]));
    }
  }
}

TEST(PerImageStandardizationGolden, MatchesTensorFlow) {
  const ImageGolden& g = ImageGolden::Get();
  double worst = 0;
  for (const auto& c : g.Cases("standardize")) {  // standardize INPUT OUTPUT
    SCOPED_TRACE(c[2]);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, PerImageStandardization(g.tensor(c[1])));
    const double diff = MaxAbsDiff(got, g.tensor(c[2]));
    EXPECT_LE(diff, 2e-6 * std::max(1.0, MaxAbs(g.tensor(c[2]))));
    worst = std::max(worst, diff);
  }
  std::printf("per_image_standardization max_abs_diff %.3g\n", worst);
}

TEST(CropTest, IntoAndErrors) {
  const Tensor img = Iota(DType::kUInt8, {5, 6, 3});
  Tensor out = Tensor::Allocate(DType::kUInt8, {2, 3, 3}).value();
  SLUICE_ASSERT_OK(CropInto(img, {1, 2, 2, 3}, &out));
  ExpectIdentical(out, *Crop(img, 1, 2, 2, 3));
  EXPECT_EQ(out.flat<uint8_t>()[0], img.flat<uint8_t>()[(1 * 6 + 2) * 3]);
  SLUICE_EXPECT_ERROR(Crop(img, -1, 0, 2, 2), kInvalid, "y=-1");
  SLUICE_EXPECT_ERROR(Crop(img, 0, 0, 0, 2), kInvalid, "[5,6,3]");
  SLUICE_EXPECT_ERROR(Crop(img, 4, 0, 2, 2), kInvalid, "inside");
  SLUICE_EXPECT_ERROR(Crop(img, 0, 5, 1, 2), kInvalid, "inside");
  SLUICE_EXPECT_ERROR(Crop(img, 0, 0, int64_t{1} << 62, 1), kInvalid, "inside");
  SLUICE_EXPECT_ERROR(Crop(Iota(DType::kUInt8, {5, 6}), 0, 0, 1, 1), kInvalid, "[5,6]");
  SLUICE_EXPECT_ERROR(CropInto(img, {0, 0, 2, 2}, &out), kInvalid, "uint8[2,2,3]");
  SLUICE_EXPECT_ERROR(CropInto(img, {0, 0, 2, 2}, nullptr), kInvalid, "null");
}

TEST(CentralCropTest, FullFractionSharesAndBadFractionsFail) {
  const Tensor img = Iota(DType::kFloat32, {4, 4, 1});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor same, CentralCrop(img, 1.0));
  EXPECT_EQ(same.raw_data(), img.raw_data());
  for (double f : {0.0, -0.5, 1.0001, std::nan("")}) {
    SLUICE_EXPECT_ERROR(CentralCrop(img, f), kInvalid, "fraction");
  }
  SLUICE_EXPECT_ERROR(CentralCrop(Iota(DType::kFloat32, {4, 4}), 0.5), kInvalid, "[4,4]");
  SLUICE_ASSERT_OK_AND_ASSIGN(CropWindow w, CentralCropWindow(375, 500, 0.875));
  EXPECT_EQ(w, (CropWindow{23, 31, 329, 438}));
}

TEST(Rot90Test, ShapesAndErrors) {
  const Tensor img = Iota(DType::kInt32, {2, 3, 4, 2});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor r1, Rot90(img, 1));
  EXPECT_EQ(r1.shape(), (Shape{2, 4, 3, 2}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor r4, Rot90(r1, 3));
  ExpectIdentical(r4, img);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, Rot90(r1, -1));
  ExpectIdentical(back, img);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor r0, Rot90(img, 8));
  EXPECT_EQ(r0.raw_data(), img.raw_data());
  SLUICE_EXPECT_ERROR(Rot90(Iota(DType::kInt32, {3}), 1), kInvalid, "[3]");
  SLUICE_EXPECT_ERROR(Rot90(Tensor::FromStrings({"a"}).value().Reshape({1, 1, 1}).value(), 1),
                      kInvalid, "string");
}

TEST(FlipTest, RgbRowsOfEveryWidthMatchAPlainReverse) {
  // uint8 and float RGB take the wide-move loops: rows of every small width
  // (and one of 224) against a pixel-by-pixel reference.
  for (DType dt : {DType::kUInt8, DType::kFloat32}) {
    for (int64_t w : {1, 2, 3, 4, 5, 17, 224}) {
      const Tensor img = Iota(dt, {3, w, 3});
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor lr, FlipLeftRight(img));
      const size_t esize = DTypeSize(dt);
      const auto* in = static_cast<const uint8_t*>(img.raw_data());
      const auto* out = static_cast<const uint8_t*>(lr.raw_data());
      for (int64_t y = 0; y < 3; ++y) {
        for (int64_t x = 0; x < w; ++x) {
          EXPECT_EQ(std::memcmp(out + ((y * w + x) * 3) * esize,
                                in + ((y * w + (w - 1 - x)) * 3) * esize, 3 * esize),
                    0)
              << DTypeName(dt) << " width " << w << " at " << y << "," << x;
        }
      }
    }
  }
}

TEST(FlipTest, WideChannelsAndErrors) {
  // 5 channels of float64: 40-byte pixels take the generic path.
  const Tensor img = Iota(DType::kFloat64, {3, 4, 5});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor lr, FlipLeftRight(img));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor ud, FlipUpDown(img));
  for (int64_t y = 0; y < 3; ++y)
    for (int64_t x = 0; x < 4; ++x)
      for (int64_t c = 0; c < 5; ++c) {
        const double v = img.flat<double>()[(y * 4 + x) * 5 + c];
        EXPECT_EQ(lr.flat<double>()[(y * 4 + (3 - x)) * 5 + c], v);
        EXPECT_EQ(ud.flat<double>()[((2 - y) * 4 + x) * 5 + c], v);
      }
  Tensor same = img;
  SLUICE_EXPECT_ERROR(FlipLeftRightInto(img, &same), kInvalid, "shares bytes");
  SLUICE_EXPECT_ERROR(FlipUpDown(Iota(DType::kFloat64, {3, 4})), kInvalid, "[3,4]");
}

TEST(ConvertImageDtypeTest, CommonPathsAndErrors) {
  const Tensor u8 = Iota(DType::kUInt8, {2, 2, 1});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor f, ConvertImageDtype(u8, DType::kFloat32));
  EXPECT_EQ(f.flat<float>()[1], 1.0f * static_cast<float>(1.0 / 255.0));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, ConvertImageDtype(f, DType::kUInt8));
  ExpectIdentical(back, u8);  // round trip is exact
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor same, ConvertImageDtype(u8, DType::kUInt8));
  EXPECT_EQ(same.raw_data(), u8.raw_data());
  SLUICE_EXPECT_ERROR(ConvertImageDtype(u8, DType::kBool), kInvalid, "bool");
  SLUICE_EXPECT_ERROR(ConvertImageDtype(Tensor::Zeros(DType::kBool, {1}).value(), DType::kFloat32),
                      kInvalid, "bool");
}

TEST(CastTest, SaturateCastAndErrors) {
  const std::vector<float> v = {-1.5f, 0.5f, 255.9f, 300.0f, NAN, INFINITY, -3e9f, 3e9f};
  const Tensor x = Tensor::FromVector(v).value();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor u8, SaturateCast(x, DType::kUInt8));
  EXPECT_EQ(std::vector<uint8_t>(u8.flat<uint8_t>().begin(), u8.flat<uint8_t>().end()),
            (std::vector<uint8_t>{0, 0, 255, 255, 0, 255, 0, 255}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor i32, SaturateCast(x, DType::kInt32));
  EXPECT_EQ(i32.flat<int32_t>()[6], INT32_MIN);
  EXPECT_EQ(i32.flat<int32_t>()[7], INT32_MAX);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor h, SaturateCast(x, DType::kFloat16));
  EXPECT_EQ(static_cast<float>(h.flat<float16>()[5]), 65504.0f);
  const Tensor big = Tensor::FromVector(std::vector<int64_t>{-5, 70000, int64_t{1} << 40}).value();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b8, SaturateCast(big, DType::kUInt8));
  EXPECT_EQ(b8.flat<uint8_t>()[0], 0);
  EXPECT_EQ(b8.flat<uint8_t>()[1], 255);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b32, SaturateCast(big, DType::kInt32));
  EXPECT_EQ(b32.flat<int32_t>()[2], INT32_MAX);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor same, Cast(x, DType::kFloat32));
  EXPECT_EQ(same.raw_data(), x.raw_data());
  SLUICE_EXPECT_ERROR(Cast(x, DType::kString), kInvalid, "string");
  Tensor wrong = Tensor::Allocate(DType::kInt32, {3}).value();
  SLUICE_EXPECT_ERROR(CastInto(x, &wrong), kInvalid, "[8]");
}

TEST(CastTest, OutOfRangeFloatsAreDefined) {
  const std::vector<float> v = {-1.5f, 300.7f, NAN, INFINITY, -INFINITY, 3e9f, 255.9f, -0.9f};
  const Tensor x = Tensor::FromVector(v).value();
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor u8, Cast(x, DType::kUInt8));
  EXPECT_EQ(std::vector<uint8_t>(u8.flat<uint8_t>().begin(), u8.flat<uint8_t>().end()),
            (std::vector<uint8_t>{0, 255, 0, 0, 0, 0, 255, 0}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor i32, Cast(x, DType::kInt32));
  EXPECT_EQ(std::vector<int32_t>(i32.flat<int32_t>().begin(), i32.flat<int32_t>().end()),
            (std::vector<int32_t>{-1, 300, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, 255, 0}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor i64, Cast(x, DType::kInt64));
  EXPECT_EQ(i64.flat<int64_t>()[5], 3000000000);
  EXPECT_EQ(i64.flat<int64_t>()[2], INT64_MIN);
  // Integers to float64 directly, not through float32.
  const int64_t big = (int64_t{1} << 53) - 1;
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Tensor d, Cast(Tensor::FromVector(std::vector<int64_t>{big}).value(), DType::kFloat64));
  EXPECT_EQ(d.flat<double>()[0], static_cast<double>(big));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Tensor c, ConvertImageDtype(Tensor::FromVector(std::vector<int32_t>{16777217}).value(),
                                  DType::kFloat64));
  EXPECT_EQ(c.flat<double>()[0], 16777217.0 * (1.0 / 2147483647.0));
}

// RowNormalizer::ApplyMirrored (the streamed DecodeCropResize's mirrored
// rows) gives the bits of the plain formula on the reversed row, on both
// paths (eight RGB pixels at a time with AVX2, the scalar loop), at every
// width up to 40 pixels (whole blocks and tails) and for 1..4 channels.
TEST(NormalizeTest, ApplyMirroredIsReverseThenNormalize) {
  for (bool no_avx2 : {false, true}) {
    ops_internal::Avx2DisabledForTesting() = no_avx2;
    for (int64_t channels : {1, 2, 3, 4}) {
      std::vector<float> mean(channels), sd(channels);
      for (int64_t c = 0; c < channels; ++c) {
        mean[c] = 100.0f + 7.3f * c;
        sd[c] = 57.0f + 1.1f * c;
      }
      const ops_internal::RowNormalizer norm(mean.data(), sd.data(), channels);
      for (int64_t width = 0; width <= 40; ++width) {
        std::vector<float> in(width * channels), out(width * channels, -1.0f);
        for (size_t i = 0; i < in.size(); ++i) in[i] = 0.37f * static_cast<float>(i * i % 255);
        norm.ApplyMirrored(in.data(), width, out.data());
        for (int64_t x = 0; x < width; ++x) {
          for (int64_t c = 0; c < channels; ++c) {
            const float want = (in[(width - 1 - x) * channels + c] - mean[c]) / sd[c];
            ASSERT_EQ(out[x * channels + c], want)
                << (no_avx2 ? "no avx2 " : "") << "channels " << channels << " width " << width
                << " pixel " << x << " channel " << c;
          }
        }
      }
    }
  }
  ops_internal::Avx2DisabledForTesting() = false;
}

// Every path (AVX2 where the CPU has it, SSE2, the scalar tail) gives the
// bits of the plain formula, for uint8 and float input and any channels.
TEST(NormalizeTest, PerChannelAndBroadcast) {
  for (bool no_avx2 : {false, true}) {
    ops_internal::Avx2DisabledForTesting() = no_avx2;
    for (DType dtype : {DType::kUInt8, DType::kFloat32, DType::kInt32}) {
      for (int64_t channels : {1, 2, 3, 4, 5, 6, 7, 8, 9, 70}) {
        SCOPED_TRACE(std::string(no_avx2 ? "no avx2 " : "") + std::string(DTypeName(dtype)) +
                     " channels " + std::to_string(channels));
        const Tensor img = Iota(dtype, {5, 9, channels});
        std::vector<float> mean(channels), sd(channels);
        for (int64_t c = 0; c < channels; ++c) {
          mean[c] = 10.0f * c + 0.5f;
          sd[c] = 1.0f + 0.37f * c;
        }
        SLUICE_ASSERT_OK_AND_ASSIGN(Tensor out, Normalize(img, mean, sd));
        ASSERT_EQ(out.dtype(), DType::kFloat32);
        SLUICE_ASSERT_OK_AND_ASSIGN(Tensor in, Cast(img, DType::kFloat32));
        for (int64_t i = 0; i < img.num_elements(); ++i) {
          const int64_t c = i % channels;
          ASSERT_EQ(out.flat<float>()[i], (in.flat<float>()[i] - mean[c]) / sd[c]) << i;
        }
      }
    }
  }
  ops_internal::Avx2DisabledForTesting() = false;
  const Tensor f = Iota(DType::kFloat32, {2, 2, 3});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor one, Normalize(f, {1.0f}, {2.0f}));
  EXPECT_EQ(one.flat<float>()[5], (5.0f - 1.0f) / 2.0f);
  Tensor into = Tensor::Allocate(DType::kFloat32, {2, 2, 3}).value();
  const std::array<float, 3> m = {1, 2, 3}, s = {1, 1, 2};
  SLUICE_ASSERT_OK(NormalizeInto(f, m, s, &into));
  EXPECT_EQ(into.flat<float>()[5], (5.0f - 3.0f) / 2.0f);
}

TEST(NormalizeTest, Errors) {
  const Tensor img = Iota(DType::kUInt8, {2, 2, 3});
  SLUICE_EXPECT_ERROR(Normalize(img, {1.0f, 2.0f}, {1.0f}), kInvalid, "mean has 2 values");
  SLUICE_EXPECT_ERROR(Normalize(img, {1.0f}, {1.0f, 0.0f, 1.0f}), kInvalid, "non-zero");
  SLUICE_EXPECT_ERROR(Normalize(img, {1.0f}, {INFINITY}), kInvalid, "finite");
  SLUICE_EXPECT_ERROR(Normalize(img, std::span<const float>(), std::span<const float>()), kInvalid,
                      "expected 1 or 3");
  SLUICE_EXPECT_ERROR(Normalize(Tensor::Scalar(1.0f), {1.0f}, {1.0f}), kInvalid, "channel");
  Tensor out = Tensor::Allocate(DType::kFloat64, {2, 2, 3}).value();
  SLUICE_EXPECT_ERROR(NormalizeInto(img, std::array<float, 1>{0}, std::array<float, 1>{1}, &out),
                      kInvalid, "float32[2,2,3]");
}

TEST(PerImageStandardizationTest, MeanZeroVarianceOneAndErrors) {
  const Tensor img = Iota(DType::kUInt8, {3, 6, 7, 3});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor out, PerImageStandardization(img));
  for (int64_t b = 0; b < 3; ++b) {
    double sum = 0, sq = 0;
    const int64_t n = 6 * 7 * 3;
    for (int64_t i = 0; i < n; ++i) {
      const double v = out.flat<float>()[b * n + i];
      sum += v;
      sq += v * v;
    }
    EXPECT_NEAR(sum / n, 0.0, 1e-5);
    EXPECT_NEAR(sq / n, 1.0, 1e-4);
  }
  SLUICE_EXPECT_ERROR(PerImageStandardization(Iota(DType::kUInt8, {6, 7})), kInvalid, "[6,7]");
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor empty,
                              PerImageStandardization(Iota(DType::kUInt8, {0, 7, 3})));
  EXPECT_EQ(empty.num_elements(), 0);
}

}  // namespace
}  // namespace sluice::ops
