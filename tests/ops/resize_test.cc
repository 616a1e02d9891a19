#include "sluice/ops/resize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "image_golden.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using image_golden::ImageGolden;
using image_golden::MaxAbs;
using image_golden::MaxAbsDiff;

Tensor Ramp(DType dtype, const Shape& shape, int mod = 251) {
  Tensor t = Tensor::Allocate(dtype, shape).value();
  VisitDType(dtype, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, std::string_view>) {
      auto f = t.flat<T>();
      for (size_t i = 0; i < f.size(); ++i)
        f[i] = static_cast<T>(static_cast<float>((i * 37) % mod));
    }
  });
  return t;
}

// Every resize case of the golden data, against tf.image.resize. Prints the
// largest absolute difference per method (and relative to the largest
// output value): the numbers docs/ops.md reports.
TEST(ResizeGolden, MatchesTensorFlow) {
  const ImageGolden& g = ImageGolden::Get();
  const auto cases = g.Cases("resize");
  ASSERT_GT(cases.size(), 100u);
  struct Worst {
    double abs = 0, rel = 0;
    int n = 0;
  };
  std::map<std::string, Worst> worst;
  for (const auto& c : cases) {
    // resize INPUT METHOD ANTIALIAS PRESERVE H W OUTPUT
    SCOPED_TRACE(c[7]);
    const Tensor& input = g.tensor(c[1]);
    const Tensor& expected = g.tensor(c[7]);
    ResizeOptions o;
    SLUICE_ASSERT_OK_AND_ASSIGN(o.method, ResizeMethodFromName(c[2]));
    o.antialias = c[3] == "1";
    o.preserve_aspect_ratio = c[4] == "1";
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor got, Resize(input, {std::stoll(c[5]), std::stoll(c[6])}, o));
    ASSERT_EQ(got.dtype(), expected.dtype());
    ASSERT_EQ(got.shape(), expected.shape());
    const double diff = MaxAbsDiff(got, expected);
    const double rel = diff / std::max(1.0, MaxAbs(expected));
    if (o.method == ResizeMethod::kNearest) {
      EXPECT_TRUE(Identical(got, expected)) << got.DebugString(40) << "\n"
                                            << expected.DebugString(40);
    } else {
      // float32 rounding of sums of a few products: a few ulp of the range.
      EXPECT_LE(rel, 2e-6) << "max abs diff " << diff;
    }
    Worst& w = worst[c[2] + (o.antialias ? " antialias" : "")];
    w.abs = std::max(w.abs, diff);
    w.rel = std::max(w.rel, rel);
    ++w.n;
  }
  std::printf("%-24s %6s %14s %14s\n", "method", "cases", "max_abs_diff", "max_rel_diff");
  for (const auto& [name, w] : worst) {
    std::printf("%-24s %6d %14.3g %14.3g\n", name.c_str(), w.n, w.abs, w.rel);
  }
}

// The comparison above reports 0 only if the outputs really are equal.
TEST(ResizeGolden, DiffHelperSeesDifferences) {
  const Tensor& golden = ImageGolden::Get().tensor("resize_u8_17x23x3_bilinear_0_8x11");
  ASSERT_EQ(golden.dtype(), DType::kFloat32);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor changed, golden.Clone());
  EXPECT_EQ(MaxAbsDiff(golden, changed), 0.0);
  changed.flat<float>()[3] += 0.5f;
  EXPECT_NEAR(MaxAbsDiff(golden, changed), 0.5, 1e-4);
}

TEST(ResizeTest, MethodNamesRoundTrip) {
  for (auto m : {ResizeMethod::kBilinear, ResizeMethod::kNearest, ResizeMethod::kBicubic,
                 ResizeMethod::kArea, ResizeMethod::kLanczos3, ResizeMethod::kLanczos5,
                 ResizeMethod::kGaussian, ResizeMethod::kMitchellCubic}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(ResizeMethod back, ResizeMethodFromName(ResizeMethodName(m)));
    EXPECT_EQ(back, m);
  }
  EXPECT_EQ(*ResizeMethodFromName("nearest_neighbor"), ResizeMethod::kNearest);
  SLUICE_EXPECT_ERROR(ResizeMethodFromName("cubic"), StatusCode::kInvalidArgument, "cubic");
}

TEST(ResizeTest, OutputDTypes) {
  const Tensor u8 = Ramp(DType::kUInt8, {4, 5, 3});
  EXPECT_EQ(Resize(u8, {2, 2})->dtype(), DType::kFloat32);
  EXPECT_EQ(Resize(u8, {2, 2}, {.method = ResizeMethod::kNearest})->dtype(), DType::kUInt8);
  EXPECT_EQ(Resize(u8, {2, 2}, {.method = ResizeMethod::kArea})->dtype(), DType::kFloat32);
  EXPECT_EQ(ResizeOutputDType(DType::kInt64, ResizeMethod::kNearest), DType::kInt64);
  EXPECT_EQ(ResizeOutputDType(DType::kInt64, ResizeMethod::kBicubic), DType::kFloat32);
}

// Weights sum to 1: a constant image stays constant, for every method, dtype
// and direction (bicubic and lanczos renormalize at the borders).
TEST(ResizeTest, ConstantImageStaysConstant) {
  for (DType dt : {DType::kUInt8, DType::kFloat32, DType::kInt32, DType::kFloat16, DType::kBFloat16,
                   DType::kFloat64, DType::kInt64}) {
    Tensor img = Tensor::Allocate(dt, {2, 13, 9, 5}).value();
    VisitDType(dt, [&](auto v) {
      using T = decltype(v);
      if constexpr (!std::is_same_v<T, std::string_view>) {
        for (T& x : img.flat<T>()) x = static_cast<T>(100.0f);
      }
    });
    for (auto m : {ResizeMethod::kBilinear, ResizeMethod::kBicubic, ResizeMethod::kArea,
                   ResizeMethod::kLanczos3, ResizeMethod::kLanczos5, ResizeMethod::kGaussian,
                   ResizeMethod::kMitchellCubic}) {
      for (bool aa : {false, true}) {
        for (ImageSize size : {ImageSize{5, 4}, ImageSize{31, 20}, ImageSize{1, 1}}) {
          SLUICE_ASSERT_OK_AND_ASSIGN(Tensor out,
                                      Resize(img, size, {.method = m, .antialias = aa}));
          for (float x : out.flat<float>()) {
            ASSERT_NEAR(x, 100.0f, 1e-3) << ResizeMethodName(m) << " aa=" << aa;
          }
        }
      }
    }
  }
}

TEST(ResizeTest, BatchEqualsEachImage) {
  const Tensor batch = Ramp(DType::kUInt8, {3, 11, 7, 3});
  for (auto m : {ResizeMethod::kBilinear, ResizeMethod::kNearest, ResizeMethod::kArea,
                 ResizeMethod::kBicubic}) {
    for (bool aa : {false, true}) {
      const ResizeOptions o{.method = m, .antialias = aa};
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor all, Resize(batch, {5, 9}, o));
      ASSERT_EQ(all.shape(), (Shape{3, 5, 9, 3}));
      for (int64_t i = 0; i < 3; ++i) {
        SLUICE_ASSERT_OK_AND_ASSIGN(Tensor one, Resize(*batch.Row(i), {5, 9}, o));
        EXPECT_TRUE(Identical(*all.Row(i), one)) << ResizeMethodName(m);
      }
    }
  }
}

TEST(ResizeTest, IntoMatchesResize) {
  const Tensor img = Ramp(DType::kFloat32, {9, 12, 2});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor expected,
                              Resize(img, {4, 5}, {.method = ResizeMethod::kArea}));
  Tensor out = Tensor::Allocate(DType::kFloat32, {4, 5, 2}).value();
  SLUICE_ASSERT_OK(ResizeInto(img, &out, {.method = ResizeMethod::kArea}));
  EXPECT_TRUE(Identical(out, expected));
}

TEST(ResizeTest, SameSizeBilinearIsACast) {
  const Tensor img = Ramp(DType::kUInt8, {6, 7, 3});
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor out, Resize(img, {6, 7}));
  for (int64_t i = 0; i < img.num_elements(); ++i) {
    EXPECT_EQ(out.flat<float>()[i], static_cast<float>(img.flat<uint8_t>()[i]));
  }
}

TEST(ResizeTest, AreaToOnePixelIsTheMean) {
  const Tensor img = Ramp(DType::kFloat32, {10, 20, 1}, 97);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor out, Resize(img, {1, 1}, {.method = ResizeMethod::kArea}));
  const auto f = img.flat<float>();
  const double mean = std::accumulate(f.begin(), f.end(), 0.0) / f.size();
  EXPECT_NEAR(out.flat<float>()[0], mean, 1e-3);
}

TEST(ResizeTest, ManyChannels) {
  // Channel counts without a specialized loop take the generic one.
  const Tensor img = Ramp(DType::kUInt8, {6, 5, 7});
  for (auto m : {ResizeMethod::kBilinear, ResizeMethod::kNearest, ResizeMethod::kArea,
                 ResizeMethod::kBicubic}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor all, Resize(img, {4, 9}, {.method = m}));
    for (int64_t c = 0; c < 7; ++c) {
      Tensor one = Tensor::Allocate(DType::kUInt8, {6, 5, 1}).value();
      for (int64_t p = 0; p < 30; ++p) one.flat<uint8_t>()[p] = img.flat<uint8_t>()[p * 7 + c];
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor r, Resize(one, {4, 9}, {.method = m}));
      for (int64_t p = 0; p < 36; ++p) {
        ASSERT_EQ(image_golden::ElementAsDouble(all, p * 7 + c),
                  image_golden::ElementAsDouble(r, p))
            << ResizeMethodName(m);
      }
    }
  }
}

TEST(ResizeTest, PreserveAspectRatioShape) {
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Shape s, ResizeOutputShape({1, 5, 5, 1}, {10, 20}, {.preserve_aspect_ratio = true}));
  EXPECT_EQ(s, (Shape{1, 10, 10, 1}));
  SLUICE_ASSERT_OK_AND_ASSIGN(
      s, ResizeOutputShape({375, 500, 3}, {224, 224}, {.preserve_aspect_ratio = true}));
  EXPECT_EQ(s, (Shape{168, 224, 3}));
}

TEST(ResizeTest, RejectsBadArguments) {
  const Tensor img = Ramp(DType::kUInt8, {4, 5, 3});
  const auto kInvalid = StatusCode::kInvalidArgument;
  SLUICE_EXPECT_ERROR(Resize(Ramp(DType::kUInt8, {4, 5}), {2, 2}), kInvalid, "[4,5]");
  SLUICE_EXPECT_ERROR(Resize(Ramp(DType::kUInt8, {1, 1, 4, 5, 3}), {2, 2}), kInvalid,
                      "[1,1,4,5,3]");
  SLUICE_EXPECT_ERROR(Resize(img, {0, 2}), kInvalid, "[0, 2]");
  SLUICE_EXPECT_ERROR(Resize(img, {2, -1}), kInvalid, "[2, -1]");
  SLUICE_EXPECT_ERROR(Resize(img, {int64_t{1} << 31, 2}), kInvalid, "2147483648");
  SLUICE_EXPECT_ERROR(Resize(Ramp(DType::kUInt8, {0, 5, 3}), {2, 2}), kInvalid, "[0,5,3]");
  SLUICE_EXPECT_ERROR(Resize(Ramp(DType::kUInt8, {4, 5, 0}), {2, 2}), kInvalid, "channel");
  SLUICE_EXPECT_ERROR(Resize(Tensor::Zeros(DType::kBool, {4, 5, 1}).value(), {2, 2}), kInvalid,
                      "bool");
  EXPECT_TRUE(Resize(Tensor::Zeros(DType::kBool, {4, 5, 1}).value(), {2, 2},
                     {.method = ResizeMethod::kNearest})
                  .ok());
  SLUICE_EXPECT_ERROR(Resize(Tensor::FromStrings({"a"}).value().Reshape({1, 1, 1}).value(), {2, 2},
                             {.method = ResizeMethod::kNearest}),
                      kInvalid, "string");
  // ResizeInto: wrong dtype, shape, aliasing, preserve_aspect_ratio, null.
  Tensor out = Tensor::Allocate(DType::kUInt8, {2, 2, 3}).value();
  SLUICE_EXPECT_ERROR(ResizeInto(img, &out), kInvalid, "float32[2,2,3]");
  out = Tensor::Allocate(DType::kFloat32, {2, 2, 1}).value();
  SLUICE_EXPECT_ERROR(ResizeInto(img, &out), kInvalid, "[2,2,1]");
  out = Tensor::Allocate(DType::kFloat32, {2, 2, 3}).value();
  SLUICE_EXPECT_ERROR(ResizeInto(img, &out, {.preserve_aspect_ratio = true}), kInvalid,
                      "preserve_aspect_ratio");
  SLUICE_EXPECT_ERROR(ResizeInto(img, nullptr), kInvalid, "null");
  Tensor same = img;
  SLUICE_EXPECT_ERROR(ResizeInto(img, &same, {.method = ResizeMethod::kNearest}), kInvalid,
                      "shares bytes");
  // A batch of zero images is fine.
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor empty, Resize(Ramp(DType::kUInt8, {0, 4, 5, 3}), {7, 2}));
  EXPECT_EQ(empty.shape(), (Shape{0, 7, 2, 3}));
}

}  // namespace
}  // namespace sluice::ops
