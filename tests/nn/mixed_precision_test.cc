// Mixed precision (nn/policy.h) on the CPU backend: the policy API, the
// backends' bfloat16 staging (nn/kit/float32_staging.h), layers that
// compute in bfloat16 with float32 weights, and whole models that train.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/nn/kit/float32_staging.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

// Sets the global policy for one test and restores float32 after it.
class PolicyScope {
 public:
  explicit PolicyScope(const DTypePolicy& p) { SetGlobalPolicy(p); }
  ~PolicyScope() { SetGlobalPolicy(DTypePolicy::Float32()); }
};

Backend& Cpu() { return **GetBackend(Device::Cpu()); }

float RoundBf16(float v) { return static_cast<float>(bfloat16(v)); }

// A float32 host tensor of `shape` with values in [-2, 2).
Tensor Random(const Shape& shape, uint64_t seed) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, shape);
  Rng rng(seed);
  for (float& v : t.flat<float>()) v = rng.Uniform(-2, 2);
  return t;
}

DeviceTensor ToBf16(const Tensor& host) {
  DeviceTensor f = *Cpu().ToDevice(host);
  DeviceTensor b = *Cpu().Allocate(DType::kBFloat16, host.shape());
  EXPECT_TRUE(Cpu().Cast(f, 1.0f, &b).ok());
  return b;
}

std::vector<float> Values(const DeviceTensor& t) {
  Tensor h = *Cpu().ToHost(t);
  std::vector<float> out;
  if (h.dtype() == DType::kBFloat16) {
    for (bfloat16 v : h.flat<bfloat16>()) out.push_back(static_cast<float>(v));
  } else {
    for (float v : h.flat<float>()) out.push_back(v);
  }
  return out;
}

TEST(PolicyTest, NamesAndGlobalDefault) {
  EXPECT_EQ(GlobalPolicy(), DTypePolicy::Float32());
  EXPECT_EQ(DTypePolicy::Float32().name(), "float32");
  EXPECT_EQ(DTypePolicy::MixedBFloat16().name(), "mixed_bfloat16");
  EXPECT_EQ(DTypePolicy::MixedBFloat16().compute_dtype(), DType::kBFloat16);
  EXPECT_EQ(DTypePolicy::MixedBFloat16().variable_dtype(), DType::kFloat32);
  EXPECT_EQ(*DTypePolicy::FromName("mixed_bfloat16"), DTypePolicy::MixedBFloat16());
  Result<DTypePolicy> fp16 = DTypePolicy::FromName("mixed_float16");
  ASSERT_FALSE(fp16.ok());
  EXPECT_NE(fp16.status().message().find("loss scaling"), std::string::npos);
  EXPECT_FALSE(DTypePolicy::FromName("float64").ok());
}

TEST(PolicyTest, LayersTakeTheGlobalPolicyWhenMade) {
  Dense before(4);
  PolicyScope mixed(DTypePolicy::MixedBFloat16());
  Dense after(4);
  EXPECT_EQ(before.compute_dtype(), DType::kFloat32);
  EXPECT_EQ(after.compute_dtype(), DType::kBFloat16);
  ASSERT_TRUE(after.BuildFor(Shape{1, 3}).ok());
  Status s = after.SetDTypePolicy(DTypePolicy::Float32());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("mixed_bfloat16"), std::string::npos) << s.ToString();
  // The weights are float32 whatever the policy.
  for (Variable* v : after.weights()) EXPECT_EQ(v->value().dtype(), DType::kFloat32);
}

TEST(Bf16StagingTest, CastRoundsToNearestEven) {
  Tensor x = *Tensor::FromVector<float>({1.0f, std::bit_cast<float>(0x3f808000u),
                                         std::bit_cast<float>(0x3f818000u), -3.14159f, 1e-40f});
  DeviceTensor b = ToBf16(x);
  std::vector<float> got = Values(b);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i], RoundBf16(x.flat<float>()[i])) << i;
  // Cast's scale applies before the rounding.
  DeviceTensor s = *Cpu().Allocate(DType::kBFloat16, x.shape());
  ASSERT_TRUE(Cpu().Cast(*Cpu().ToDevice(x), 0.5f, &s).ok());
  EXPECT_EQ(Values(s)[3], RoundBf16(-3.14159f * 0.5f));
}

// A bfloat16 method equals the float32 method on the widened values with
// each output rounded once.
TEST(Bf16StagingTest, MatMulAccumulatesInFloat32AndRoundsOnce) {
  Tensor a = Random(Shape{5, 7}, 1), b = Random(Shape{7, 3}, 2);
  DeviceTensor ab = ToBf16(a), bb = ToBf16(b);
  // Reference: float32 MatMul of the bfloat16 values.
  DeviceTensor af = *Cpu().Allocate(DType::kFloat32, a.shape());
  DeviceTensor bf = *Cpu().Allocate(DType::kFloat32, b.shape());
  ASSERT_TRUE(Cpu().Cast(ab, 1.0f, &af).ok());
  ASSERT_TRUE(Cpu().Cast(bb, 1.0f, &bf).ok());
  DeviceTensor ref = *Cpu().Allocate(DType::kFloat32, Shape{5, 3});
  ASSERT_TRUE(Cpu().MatMul(af, false, bf, false, 0.0f, &ref).ok());

  DeviceTensor c32 = *Cpu().Allocate(DType::kFloat32, Shape{5, 3});
  ASSERT_TRUE(Cpu().MatMul(ab, false, bb, false, 0.0f, &c32).ok());
  EXPECT_EQ(Values(c32), Values(ref));  // float32 output: not rounded
  DeviceTensor c16 = *Cpu().Allocate(DType::kBFloat16, Shape{5, 3});
  ASSERT_TRUE(Cpu().MatMul(ab, false, bb, false, 0.0f, &c16).ok());
  std::vector<float> r = Values(ref), got = Values(c16);
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(got[i], RoundBf16(r[i])) << i;
  // beta reads the old bfloat16 c.
  ASSERT_TRUE(Cpu().MatMul(ab, false, bb, false, 1.0f, &c16).ok());
  std::vector<float> twice = Values(c16);
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(twice[i], RoundBf16(got[i] + r[i])) << i;
}

TEST(Bf16StagingTest, InPlaceActivationAndMixedOperands) {
  Tensor x = Random(Shape{4, 6}, 3);
  DeviceTensor xb = ToBf16(x);
  std::vector<float> before = Values(xb);
  ASSERT_TRUE(Cpu().ActivationForward(Activation::kTanh, xb, &xb).ok());
  std::vector<float> after = Values(xb);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i], RoundBf16(std::tanh(before[i]))) << i;
  }
  // float32 bias into a bfloat16 y.
  DeviceTensor bias = *Cpu().ToDevice(Random(Shape{6}, 4));
  ASSERT_TRUE(Cpu().BiasAdd(bias, &xb).ok());
  std::vector<float> biased = Values(xb), bv = Values(bias);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(biased[i], RoundBf16(after[i] + bv[i % 6])) << i;
  }
}

TEST(Bf16StagingTest, AFailedCallWritesNothingAndNamesTheMethod) {
  DeviceTensor a = ToBf16(Random(Shape{2, 3}, 5));
  DeviceTensor b = ToBf16(Random(Shape{4, 2}, 6));  // inner dimensions differ
  DeviceTensor c = ToBf16(Random(Shape{2, 2}, 7));
  std::vector<float> old = Values(c);
  Status s = Cpu().MatMul(a, false, b, false, 0.0f, &c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("MatMul"), std::string::npos) << s.ToString();
  EXPECT_EQ(Values(c), old);
  // A bfloat16 tensor of the wrong device is named by the method called.
  DeviceTensor elsewhere(Device::Gpu(0), *Tensor::Allocate(DType::kBFloat16, Shape{2, 3}));
  s = Cpu().ActivationForward(Activation::kRelu, elsewhere, &a);
  EXPECT_NE(s.message().find("ActivationForward: x is not on cpu:0"), std::string::npos)
      << s.ToString();
}

// A mixed Dense layer: bfloat16 input and output, float32 weights and
// gradients, output = round(round(x·W) + b) of the rounded x and W.
TEST(MixedLayerTest, DenseComputesInBfloat16) {
  PolicyScope mixed(DTypePolicy::MixedBFloat16());
  SetRandomSeed(3);
  Dense dense(3);
  Tensor x = Random(Shape{4, 5}, 8);
  Result<DeviceTensor> y = dense.Forward(*Cpu().ToDevice(x), true);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->dtype(), DType::kBFloat16);
  std::vector<float> w = Values(dense.weights()[0]->value());
  std::vector<float> bias = Values(dense.weights()[1]->value());
  std::vector<float> got = Values(*y);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 5; ++k) {
        s += double{RoundBf16(x.flat<float>()[i * 5 + k])} * RoundBf16(w[k * 3 + j]);
      }
      const float want = RoundBf16(RoundBf16(static_cast<float>(s)) + bias[j]);
      // float32 accumulation may round the sum differently: one bf16 step.
      EXPECT_NEAR(got[i * 3 + j], want, std::abs(want) * 0x1p-7 + 1e-6) << i << "," << j;
    }
  }
  // The gradient into a float32 caller is float32; the weight gradients too.
  DeviceTensor dy = *Cpu().ToDevice(Random(Shape{4, 3}, 9));
  Result<DeviceTensor> dx = dense.Backprop(dy);
  ASSERT_TRUE(dx.ok()) << dx.status().ToString();
  EXPECT_EQ(dx->dtype(), DType::kFloat32);
  for (DeviceTensor* g : dense.gradients()) EXPECT_EQ(g->dtype(), DType::kFloat32);
}

// n 8x8x1 images whose class is the brighter half (left or right).
std::pair<Tensor, Tensor> Halves(int64_t n, uint64_t seed) {
  Tensor x = *Tensor::Allocate(DType::kFloat32, Shape{n, 8, 8, 1});
  Tensor y = *Tensor::Allocate(DType::kInt32, Shape{n});
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    const int label = rng.Uniform(0, 1) < 0.5f ? 0 : 1;
    y.flat<int32_t>()[i] = label;
    for (int p = 0; p < 64; ++p) {
      const bool bright = ((p % 8) < 4) == (label == 0);
      x.flat<float>()[i * 64 + p] = rng.Uniform(0, 1) + (bright ? 0.5f : 0.0f);
    }
  }
  return {x, y};
}

// Conv, pooling, dropout and dense: every staged method of a training step.
std::unique_ptr<Sequential> SmallCnn(bool float32_output) {
  auto model = std::make_unique<Sequential>();
  model->Add<Conv2D>(4, 3,
                     Conv2DOptions{.padding = Padding::kSame, .activation = Activation::kRelu});
  model->Add<MaxPooling2D>();
  model->Add<Flatten>();
  model->Add<Dropout>(0.25f);
  model->Add<Dense>(2);
  auto out = std::make_unique<ActivationLayer>(Activation::kSoftmax);
  if (float32_output) {
    EXPECT_TRUE(out->SetDTypePolicy(DTypePolicy::Float32()).ok());
  }
  model->Add(std::move(out));
  EXPECT_TRUE(model
                  ->Compile({.optimizer = std::make_shared<Adam>(0.01f),
                             .loss = std::make_shared<SparseCategoricalCrossentropy>(),
                             .metrics = {std::make_shared<SparseCategoricalAccuracy>()}})
                  .ok());
  return model;
}

std::vector<double> TrainLosses(Sequential& model, const Tensor& x, const Tensor& y, int steps) {
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    Result<double> loss = model.TrainStep(x, y);
    EXPECT_TRUE(loss.ok()) << loss.status().ToString();
    losses.push_back(loss.ok() ? *loss : NAN);
  }
  return losses;
}

TEST(MixedModelTest, TrainsLikeFloat32) {
  auto [x, y] = Halves(64, 11);
  SetRandomSeed(21);
  auto reference = SmallCnn(false);
  std::vector<double> ref = TrainLosses(*reference, x, y, 30);
  for (bool float32_output : {false, true}) {
    PolicyScope mixed(DTypePolicy::MixedBFloat16());
    SetRandomSeed(21);
    auto model = SmallCnn(float32_output);
    std::vector<double> got = TrainLosses(*model, x, y, 30);
    // The same initial weights: the first loss differs only by rounding.
    EXPECT_NEAR(got[0], ref[0], 0.02 * ref[0]);
    EXPECT_LT(got.back(), 0.5 * got.front()) << "float32 output " << float32_output;
    EXPECT_NEAR(got.back(), ref.back(), 0.1 + 0.5 * ref.back());
    // Master weights and optimizer slots stay float32.
    for (Variable* v : model->trainable_variables()) {
      EXPECT_EQ(v->value().dtype(), DType::kFloat32);
    }
    Result<Tensor> pred = model->Predict(x);
    ASSERT_TRUE(pred.ok()) << pred.status().ToString();
    EXPECT_EQ(pred->dtype(), float32_output ? DType::kFloat32 : DType::kBFloat16);
  }
}

}  // namespace
}  // namespace sluice::nn
