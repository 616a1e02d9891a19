// Finite-difference gradient checks of every built-in layer and loss, and
// of a custom layer, through the CPU backend.
//
// For a layer f, L = Σ r ⊙ f(x) with fixed random r, so dL/dy = r. Each
// input element and weight is nudged by ±eps and (L+ - L-) / 2eps compared
// with what Backward() reported. float32 forward passes limit the accuracy:
// the tolerance is 2e-2 relative plus 2e-3 absolute.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "sluice/core/rng.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/losses.h"

namespace sluice::nn {
namespace {

constexpr double kEps = 1e-3;

Backend& Cpu() { return **GetBackend(Device::Cpu()); }

DeviceTensor Random(const Shape& shape, uint64_t seed, float lo = -1, float hi = 1) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, shape);
  Rng rng(seed);
  for (float& v : t.flat<float>()) v = rng.Uniform(lo, hi);
  return *Cpu().ToDevice(t);
}

double Dot(const DeviceTensor& a, const DeviceTensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    s += double(a.data<float>()[i]) * b.data<float>()[i];
  return s;
}

void ExpectClose(double analytic, double numeric, const std::string& what) {
  EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::abs(numeric)) << what;
}

// Checks dL/dx and dL/dw for every weight of `layer` on input x.
void CheckLayer(Layer& layer, DeviceTensor x, uint64_t seed) {
  Result<DeviceTensor> y = layer.Forward(x, true);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  DeviceTensor r = Random(y->shape(), seed + 1);
  auto loss = [&]() {
    Result<DeviceTensor> out = layer.Forward(x, false);
    EXPECT_TRUE(out.ok());
    return Dot(*out, r);
  };
  ASSERT_TRUE(layer.Forward(x, true).ok());
  Result<DeviceTensor> dx = layer.Backward(r);
  ASSERT_TRUE(dx.ok()) << dx.status().ToString();
  // Copy the analytic gradients before the probes overwrite layer state.
  DeviceTensor dx_copy = *Cpu().ToDevice(*Cpu().ToHost(*dx)->Clone());
  std::vector<Tensor> dw;
  for (DeviceTensor* g : layer.gradients()) dw.push_back(*Cpu().ToHost(*g)->Clone());

  float* xs = x.data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    float saved = xs[i];
    xs[i] = saved + kEps;
    double up = loss();
    xs[i] = saved - kEps;
    double down = loss();
    xs[i] = saved;
    ExpectClose(dx_copy.data<float>()[i], (up - down) / (2 * kEps),
                layer.name() + " dx[" + std::to_string(i) + "]");
  }
  std::vector<Variable*> ws = layer.trainable_weights();
  for (size_t k = 0; k < ws.size(); ++k) {
    float* w = ws[k]->value().data<float>();
    for (int64_t i = 0; i < ws[k]->value().num_elements(); ++i) {
      float saved = w[i];
      w[i] = saved + kEps;
      double up = loss();
      w[i] = saved - kEps;
      double down = loss();
      w[i] = saved;
      ExpectClose(dw[k].flat<float>()[i], (up - down) / (2 * kEps),
                  ws[k]->name() + "[" + std::to_string(i) + "]");
    }
  }
}

TEST(GradientCheck, DenseLinearAndActivations) {
  for (Activation f : {Activation::kLinear, Activation::kRelu, Activation::kSigmoid,
                       Activation::kTanh, Activation::kSoftmax}) {
    Dense layer(4, {.activation = f,
                    .bias_initializer = Initializer{.kind = Initializer::Kind::kRandomUniform}});
    CheckLayer(layer, Random(Shape{3, 5}, 7), 11);
  }
}

TEST(GradientCheck, DenseOnRank3Input) {
  Dense layer(2);
  CheckLayer(layer, Random(Shape{2, 3, 4}, 3), 5);
}

TEST(GradientCheck, Conv2DPaddingsAndStrides) {
  struct Case {
    int k, stride;
    Padding padding;
    Activation f;
  } cases[] = {{3, 1, Padding::kValid, Activation::kLinear},
               {3, 2, Padding::kSame, Activation::kRelu},
               {2, 1, Padding::kSame, Activation::kTanh},
               {5, 2, Padding::kValid, Activation::kSigmoid}};
  for (const Case& c : cases) {
    Conv2D layer(3, c.k,
                 {.stride_h = c.stride,
                  .stride_w = c.stride,
                  .padding = c.padding,
                  .activation = c.f,
                  .bias_initializer = Initializer{.kind = Initializer::Kind::kRandomUniform}});
    CheckLayer(layer, Random(Shape{2, 7, 6, 2}, 21), 23);
  }
}

TEST(GradientCheck, Pooling) {
  for (Padding p : {Padding::kValid, Padding::kSame}) {
    MaxPooling2D max_pool({.pool_h = 2, .pool_w = 2, .padding = p});
    CheckLayer(max_pool, Random(Shape{2, 5, 5, 3}, 31), 33);
    AveragePooling2D avg_pool(
        {.pool_h = 3, .pool_w = 2, .stride_h = 2, .stride_w = 1, .padding = p});
    CheckLayer(avg_pool, Random(Shape{2, 5, 4, 2}, 35), 37);
  }
}

TEST(GradientCheck, FlattenActivationRescalingAndDropout) {
  Flatten flatten;
  CheckLayer(flatten, Random(Shape{2, 3, 2}, 41), 43);
  for (Activation f :
       {Activation::kRelu, Activation::kSigmoid, Activation::kTanh, Activation::kSoftmax}) {
    ActivationLayer act(f);
    CheckLayer(act, Random(Shape{3, 4}, 45), 47);
  }
  Rescaling rescale(0.5f, 0.25f);
  CheckLayer(rescale, Random(Shape{2, 3}, 49), 51);
  // Dropout at inference is the identity; in training its gradient is the
  // mask, checked against the mask it applied.
  Dropout dropout(0.5f);
  DeviceTensor x = Random(Shape{4, 64}, 53);
  DeviceTensor y = *dropout.Forward(x, true);
  DeviceTensor ones = *Cpu().Allocate(DType::kFloat32, x.shape());
  ASSERT_TRUE(Cpu().Fill(1.0f, &ones).ok());
  DeviceTensor dx = *dropout.Backward(ones);
  int dropped = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    float m = dx.data<float>()[i];
    ASSERT_TRUE(m == 0.0f || m == 2.0f) << m;
    dropped += m == 0.0f;
    EXPECT_FLOAT_EQ(y.data<float>()[i], x.data<float>()[i] * m);
  }
  EXPECT_GT(dropped, 64);
  EXPECT_LT(dropped, 192);
  DeviceTensor same = *dropout.Forward(x, false);
  EXPECT_EQ(same.raw_data(), x.raw_data());
}

// The tutorials' custom layer: y = x ⊙ w (w per feature), with its own
// backward pass.
class Scale : public Layer {
 public:
  Scale() : Layer("scale") {}
  Status Build(const Shape& in) override {
    SLUICE_ASSIGN_OR_RETURN(
        w_, AddWeight(
                "w", Shape{in.dim(in.rank() - 1)},
                Initializer{.kind = Initializer::Kind::kRandomUniform, .min = 0.5f, .max = 1.5f}));
    return Status::OK();
  }
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend().Allocate(DType::kFloat32, x.shape()));
    int64_t d = w_->shape().dim(0);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      y.data<float>()[i] = x.data<float>()[i] * w_->value().data<float>()[i % d];
    }
    if (training) x_ = x;
    return y;
  }
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, backend().Allocate(DType::kFloat32, dy.shape()));
    DeviceTensor& dw = gradient(w_);
    SLUICE_RETURN_IF_ERROR(backend().Fill(0.0f, &dw));
    int64_t d = w_->shape().dim(0);
    for (int64_t i = 0; i < dy.num_elements(); ++i) {
      dx.data<float>()[i] = dy.data<float>()[i] * w_->value().data<float>()[i % d];
      dw.data<float>()[i % d] += dy.data<float>()[i] * x_.data<float>()[i];
    }
    return dx;
  }

 private:
  Variable* w_ = nullptr;
  DeviceTensor x_;
};

TEST(GradientCheck, CustomLayer) {
  Scale layer;
  CheckLayer(layer, Random(Shape{3, 4}, 61), 63);
  EXPECT_EQ(layer.CountParams(), 4);
}

void CheckLoss(Loss& loss, DeviceTensor pred, const DeviceTensor& labels) {
  DeviceTensor dpred;
  Result<double> value = loss.Compute(Cpu(), pred, labels, &dpred);
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  Tensor analytic = *Cpu().ToHost(dpred)->Clone();
  float* p = pred.data<float>();
  for (int64_t i = 0; i < pred.num_elements(); ++i) {
    float saved = p[i];
    p[i] = saved + 1e-3f;
    double up = *loss.Compute(Cpu(), pred, labels, nullptr);
    p[i] = saved - 1e-3f;
    double down = *loss.Compute(Cpu(), pred, labels, nullptr);
    p[i] = saved;
    ExpectClose(analytic.flat<float>()[i], (up - down) / 2e-3,
                loss.name() + " dpred[" + std::to_string(i) + "]");
  }
}

TEST(GradientCheck, Losses) {
  DeviceTensor logits = Random(Shape{4, 3}, 71, -2, 2);
  DeviceTensor probs = Random(Shape{4, 3}, 73, 0.1f, 1.0f);  // renormalized by the loss
  DeviceTensor sparse = *Cpu().ToDevice(*Tensor::FromVector<int64_t>({0, 2, 1, 2}));
  DeviceTensor sparse32 =
      *Cpu().ToDevice(*Tensor::FromVector<int32_t>(std::vector<int32_t>{1, 1, 0, 2}));
  Tensor onehot_host = *Tensor::Zeros(DType::kFloat32, Shape{4, 3});
  for (int i = 0; i < 4; ++i) onehot_host.flat<float>()[i * 3 + (i % 3)] = 1.0f;
  DeviceTensor onehot = *Cpu().ToDevice(onehot_host);

  SparseCategoricalCrossentropy from_logits(true), from_probs(false);
  CheckLoss(from_logits, logits, sparse);
  CheckLoss(from_logits, logits, sparse32);
  CheckLoss(from_probs, probs, sparse);
  CategoricalCrossentropy cce_logits(true), cce_probs(false);
  CheckLoss(cce_logits, logits, onehot);
  CheckLoss(cce_probs, probs, onehot);
  MeanSquaredError mse;
  CheckLoss(mse, logits, Random(Shape{4, 3}, 75));
}

TEST(GradientCheck, LossValuesMatchKeras) {
  // keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
  //     [0, 1], [[2., 1., 0.1], [0.5, 2.5, 0.3]]) = 0.3185
  DeviceTensor logits = *Cpu().ToDevice(
      *Tensor::FromVector<float>(std::vector<float>{2, 1, 0.1f, 0.5f, 2.5f, 0.3f}, Shape{2, 3}));
  DeviceTensor labels = *Cpu().ToDevice(*Tensor::FromVector<int64_t>({0, 1}));
  double expected = 0.5 * ((std::log(std::exp(2.0) + std::exp(1.0) + std::exp(0.1)) - 2.0) +
                           (std::log(std::exp(0.5) + std::exp(2.5) + std::exp(0.3)) - 2.5));
  EXPECT_NEAR(*SparseCategoricalCrossentropy(true).Compute(Cpu(), logits, labels, nullptr),
              expected, 1e-5);
  Result<double> bad = SparseCategoricalCrossentropy(true).Compute(
      Cpu(), logits, *Cpu().ToDevice(*Tensor::FromVector<int64_t>({0, 3})), nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("3"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace sluice::nn
