// MapComponent: ops kernels as pipeline map functions, including the
// tutorials' MNIST-style map(rot90) / shuffle / batch chain.
#include "sluice/pipeline/component_map.h"

#include <gtest/gtest.h>

#include "sluice/ops/image_ops.h"
#include "sluice/ops/png.h"
#include "test_util.h"

namespace sluice {
namespace {

// n images [4, 3, 1] whose pixel (y, x) is 100 * i + 10 * y + x.
Tensor Images(int64_t n) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{n, 4, 3, 1}).value();
  auto p = t.flat<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t x = 0; x < 3; ++x)
        p[(i * 4 + y) * 3 + x] = static_cast<uint8_t>(20 * i + 4 * y + x);
  return t;
}

TEST(MapComponentTest, MnistStyleRot90ShuffleBatch) {
  const int64_t n = 10;
  Tensor labels = Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}).value();
  auto ds = Dataset::from_tensor_slices({Images(n), labels}, {"image", "label"})
                .map(MapComponent("image", [](const Tensor& t) { return ops::Rot90(t, 1); }),
                     {.parallelism = 2})
                .shuffle(10, {.seed = 4})
                .batch(4);
  SLUICE_ASSERT_OK(ds.status());
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  int64_t seen = 0;
  for (;;) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> b, it.next());
    if (!b) break;
    const Tensor& img = *b->find("image");
    const Tensor& lab = *b->find("label");
    ASSERT_EQ(img.shape().dim(1), 3);  // rotated: [3, 4, 1]
    ASSERT_EQ(img.shape().dim(2), 4);
    for (int64_t k = 0; k < img.shape().dim(0); ++k) {
      const int64_t i = lab.flat<int64_t>()[k];
      // rot90 counter-clockwise: out(y, x) = in(x, W - 1 - y) with W = 3.
      for (int64_t y = 0; y < 3; ++y)
        for (int64_t x = 0; x < 4; ++x)
          EXPECT_EQ(img.flat<uint8_t>()[(k * 3 + y) * 4 + x], 20 * i + 4 * x + (2 - y));
    }
    seen += img.shape().dim(0);
  }
  EXPECT_EQ(seen, n);
}

TEST(MapComponentTest, DecodeIntoANewComponentAndRandomFlipReproducibly) {
  Tensor img = Images(1).Slice(0, 1).value().Reshape(Shape{4, 3, 1}).value();
  const std::string png = ops::EncodePng(img).value();
  auto ds =
      Dataset::from_tensors(Element({Tensor::StringScalar(png)}, {"image/encoded"}))
          .repeat(64)
          .map(MapComponent(
              "image/encoded", "image",
              [](const Tensor& t) { return ops::DecodePng(t.scalar<std::string_view>()); }))
          .map(MapComponent("image", [](const Tensor& t,
                                        Rng& rng) { return ops::RandomFlipLeftRight(t, rng); }),
               {.parallelism = 4})
          .with_options({.seed = 9});
  auto flips = [&] {
    std::vector<int> f;
    Iterator it = ds.iterator().value();
    for (;;) {
      std::optional<Element> e = it.next().value();
      if (!e) break;
      EXPECT_EQ(e->size(), 2u);
      f.push_back(e->find("image")->flat<uint8_t>()[0] == 2);  // first pixel was 0
    }
    return f;
  };
  const std::vector<int> a = flips(), b = flips();
  EXPECT_EQ(a, b);  // same seed, same flips, whatever the parallelism
  int flipped = 0;
  for (int v : a) flipped += v;
  EXPECT_GT(flipped, 10);
  EXPECT_LT(flipped, 54);
}

TEST(MapComponentTest, ErrorsNameTheComponentAndTheStage) {
  auto ds = Dataset::from_tensors(Element({Tensor::StringScalar("not a png")}, {"bytes"}))
                .map(MapComponent("bytes", "image",
                                  [](const Tensor& t) {
                                    return ops::DecodePng(t.scalar<std::string_view>());
                                  }),
                     {.name = "decode"});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  auto r = it.next();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stage 'decode'"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("component 'bytes'"), std::string::npos);

  auto missing =
      Dataset::from_tensors(Element({Tensor::Scalar<int32_t>(1)}, {"label"}))
          .map(MapComponent("image", [](const Tensor& t) -> Result<Tensor> { return t; }));
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it2, missing.iterator());
  auto r2 = it2.next();
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r2.status().message().find("label"), std::string::npos);
}

}  // namespace
}  // namespace sluice
