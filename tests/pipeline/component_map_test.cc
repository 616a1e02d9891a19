// MapComponent: ops kernels as pipeline map functions, including the
// tutorials' MNIST-style map(rot90) / shuffle / batch chain, and the general
// form (key by index, output / keep_input, seed, ComponentContext::Allocate
// under map-and-batch fusion).
#include "sluice/pipeline/component_map.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "conformance.h"
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

// (a: 1, img: [4, 3, 1], b: "x"), the image a fresh tensor held only here.
Element ThreeComponents() {
  Tensor img = Images(1).Reshape(Shape{4, 3, 1}).value();
  return Element({Tensor::Scalar<int64_t>(1), img, Tensor::StringScalar("x")}, {"a", "img", "b"});
}

const ComponentKernel kFlip = [](Tensor t, ComponentContext&) { return ops::FlipLeftRight(t); };

Result<Element> ApplyTo(const MapFn& fn, Element e) { return fn(std::move(e), MapContext{}); }

TEST(MapComponentTest, KeyByIndexFromEitherEnd) {
  const Tensor flipped = ops::FlipLeftRight(ThreeComponents()[1]).value();
  for (int64_t k : {1, -2}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Element out, ApplyTo(MapComponent(k, kFlip), ThreeComponents()));
    EXPECT_EQ(out.names(), (std::vector<std::string>{"a", "img", "b"})) << k;
    EXPECT_EQ(out[1].DebugString(100), flipped.DebugString(100)) << k;
  }
  for (int64_t k : {3, -4}) {
    Result<Element> r = ApplyTo(MapComponent(k, kFlip, {.name = "flip"}), ThreeComponents());
    ASSERT_FALSE(r.ok()) << k;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "flip: component " + std::to_string(k) + " of an element of 3 components");
  }
  // Unnamed components are named by index in errors; a named kernel by name.
  Result<Element> r =
      ApplyTo(MapComponent(0, kFlip, {.name = "flip"}), Element({Tensor::StringScalar("x")}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("flip of component 0: ", 0), 0u) << r.status().ToString();
  r = ApplyTo(MapComponent("nope", kFlip, {.name = "flip"}), ThreeComponents());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message().rfind("flip: ", 0), 0u) << r.status().ToString();
  EXPECT_NE(r.status().message().find("img"), std::string::npos) << r.status().ToString();
}

TEST(MapComponentTest, OutputRenamesInPlaceOrKeepsTheInput) {
  const Tensor img = ThreeComponents()[1];
  const std::string flipped = ops::FlipLeftRight(img).value().DebugString(100);
  using Names = std::vector<std::string>;
  struct Case {
    ComponentMapOptions options;
    Names names;
    size_t result;  // the result's index
  };
  const std::vector<Case> cases = {
      {{.output = "flipped"}, {"a", "flipped", "b"}, 1},  // renamed in place
      {{.output = "b"}, {"a", "b"}, 1},                   // replaces b, the input goes
      {{.output = "a"}, {"a", "b"}, 0},
      {{.output = "img"}, {"a", "img", "b"}, 1},
      {{.output = "flipped", .keep_input = true}, {"a", "img", "b", "flipped"}, 3},
      {{.output = "a", .keep_input = true}, {"a", "img", "b"}, 0},
      {{.output = "img", .keep_input = true}, {"a", "img", "b"}, 1},
      {{.keep_input = true}, {"a", "img", "b"}, 1},  // no output: in place
  };
  for (const Case& c : cases) {
    const std::string label =
        c.options.output.value_or("-") + (c.options.keep_input ? " kept" : "");
    SLUICE_ASSERT_OK_AND_ASSIGN(Element out,
                                ApplyTo(MapComponent("img", kFlip, c.options), ThreeComponents()));
    EXPECT_EQ(out.names(), c.names) << label;
    EXPECT_EQ(out[c.result].DebugString(100), flipped) << label;
    if (c.options.keep_input && c.result != 1) {
      EXPECT_EQ(out[1].DebugString(100), img.DebugString(100)) << label;
    }
  }
  // The input is moved into the kernel (so it may work in place) unless kept.
  for (bool keep : {false, true}) {
    bool unique = false;
    ComponentKernel probe = [&unique](Tensor t, ComponentContext&) -> Result<Tensor> {
      unique = t.buffer().unique();
      return t;
    };
    SLUICE_ASSERT_OK(
        ApplyTo(MapComponent(1, probe, {.output = "out", .keep_input = keep}), ThreeComponents())
            .status());
    EXPECT_EQ(unique, !keep);
  }
}

// The first draw from each element's Rng, as read by `fn` over range(n)
// (sharded `shards` ways, shard 0 read), with the stage seeded 9.
std::vector<int64_t> Draws(int64_t n, int64_t shards, MapFn fn) {
  auto ds = Dataset::range(n)
                .shard(shards, 0)
                .map(std::move(fn), {.parallelism = 3})
                .with_options({.seed = 9});
  std::vector<int64_t> got;
  Iterator it = ds.iterator().value();
  while (std::optional<Element> e = it.next().value()) got.push_back((*e)[0].scalar<int64_t>());
  return got;
}

MapFn DrawComponent(std::optional<uint64_t> seed) {
  ComponentKernel draw = [](Tensor, ComponentContext& ctx) -> Result<Tensor> {
    return Tensor::Scalar<int64_t>(ctx.rng()());
  };
  return MapComponent(0, draw, {.seed = seed});
}

TEST(MapComponentTest, SeedGivesRngOfThatSeedAndTheElementsKey) {
  std::vector<int64_t> want;
  for (uint64_t i = 0; i < 8; ++i) want.push_back(Rng(7, i)());
  EXPECT_EQ(Draws(8, 1, DrawComponent(7)), want);
  // After shard(): keyed by the position before the split.
  EXPECT_EQ(Draws(8, 2, DrawComponent(7)),
            (std::vector<int64_t>{want[0], want[2], want[4], want[6]}));
  // Without one: the stage's MapContext::rng().
  const std::vector<int64_t> stage =
      Draws(8, 2, [](Element, const MapContext& c) -> Result<Element> {
        return Element({Tensor::Scalar<int64_t>(c.rng()())});
      });
  EXPECT_EQ(Draws(8, 2, DrawComponent(std::nullopt)), stage);
  EXPECT_NE(stage, (std::vector<int64_t>{want[0], want[2], want[4], want[6]}));
}

constexpr int64_t kRowFloats = 1024;  // 4 KiB: big enough to be placed in its batch row

// range(12) -> (a: k, b: k) -> the kernel writes row k through ctx.Allocate,
// stored as `options` says -> batch(4). Records each row's address in `at`.
Dataset AllocatedRows(ComponentMapOptions options, bool fusion,
                      std::shared_ptr<std::vector<const void*>> at) {
  ComponentKernel row = [at](Tensor k, ComponentContext& ctx) -> Result<Tensor> {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, ctx.Allocate(DType::kFloat32, Shape{kRowFloats}));
    const int64_t i = k.scalar<int64_t>();
    auto f = t.flat<float>();
    for (size_t j = 0; j < f.size(); ++j) f[j] = static_cast<float>(i * 10000 + j);
    (*at)[static_cast<size_t>(i)] = t.raw_data();
    return t;
  };
  return Dataset::range(12)
      .map([](Element e, const MapContext&) -> Result<Element> {
        return Element({e[0], e[0]}, {"a", "b"});
      })
      .map(MapComponent("a", row, std::move(options)), {.parallelism = 2})
      .batch(4)
      .with_options({.map_and_batch_fusion = fusion});
}

TEST(MapComponentTest, AllocateWritesTheBatchRowUnderMapAndBatchFusion) {
  // The result's index: appended (2), or in b's place once a goes (0).
  const std::vector<std::pair<ComponentMapOptions, size_t>> cases = {
      {{.output = "row", .keep_input = true}, 2}, {{.output = "b"}, 0}, {{}, 0}};
  for (const auto& [options, result] : cases) {
    const std::string label = options.output.value_or("in place");
    auto at = std::make_shared<std::vector<const void*>>(12);
    const std::vector<std::string> want = testing::ReadAll(AllocatedRows(options, false, at));
    ASSERT_EQ(want.size(), 3u) << label;
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, AllocatedRows(options, true, at).iterator());
    std::vector<std::string> got;
    for (size_t b = 0; std::optional<Element> e = it.next().value(); ++b) {
      got.push_back(e->DebugString(1000));
      ASSERT_LT(result, e->size()) << label;
      for (size_t j = 0; j < 4; ++j) {
        const char* row =
            static_cast<const char*>((*e)[result].raw_data()) + j * kRowFloats * sizeof(float);
        EXPECT_EQ(row, (*at)[b * 4 + j]) << label << " batch " << b << " row " << j;
      }
    }
    EXPECT_EQ(got, want) << label;
  }
}

TEST(MapComponentTest, EagerContextAllocatesAFreshTensor) {
  ComponentContext ctx(Rng(7, 3));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, ctx.Allocate(DType::kFloat32, Shape{kRowFloats}));
  EXPECT_EQ(t.shape(), Shape{kRowFloats});
  EXPECT_EQ(ctx.rng()(), Rng(7, 3)());
}

}  // namespace
}  // namespace sluice
