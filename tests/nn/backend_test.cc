// The CPU backend against naive double-precision references
// (reference_ops.h) on random inputs.
//
// Tolerances: elementwise ops, losses and optimizer steps agree to
// 1e-5 relative + 1e-6 absolute (float32 rounding of a few operations);
// products and convolutions to 1e-4 relative + 1e-4 absolute, since they
// sum up to a few thousand float products in an order oneDNN chooses;
// finite-difference gradients (computed in double on the reference loss)
// to 1e-3 relative + 1e-4 absolute.
#include "sluice/nn/backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "reference_ops.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

using reference::Nhwc;
using reference::Vec;

Backend* Cpu() {
  static Backend* b = GetBackend(Device::Cpu()).value();
  return b;
}

Vec Random(int64_t n, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  // Round to float so the reference sees exactly the backend's inputs.
  for (double& x : v) x = static_cast<float>(dist(gen));
  return v;
}

DeviceTensor Dev(const Vec& v, const Shape& shape) {
  std::vector<float> f(v.begin(), v.end());
  Tensor t = Tensor::FromVector<float>(std::span<const float>(f), shape).value();
  return Cpu()->ToDevice(t).value();
}

template <typename T>
DeviceTensor DevOf(const std::vector<T>& v, const Shape& shape) {
  return Cpu()->ToDevice(Tensor::FromVector<T>(std::span<const T>(v), shape).value()).value();
}

DeviceTensor Alloc(const Shape& shape) { return Cpu()->Allocate(DType::kFloat32, shape).value(); }

Vec Host(const DeviceTensor& t) {
  Tensor h = Cpu()->ToHost(t).value();
  auto f = h.flat<float>();
  return Vec(f.begin(), f.end());
}

// |got - want| <= atol + rtol · |want| everywhere; names the first miss.
void ExpectNear(const Vec& got, const Vec& want, double atol, double rtol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
      return;
    }
  }
}

constexpr double kElemAtol = 1e-6, kElemRtol = 1e-5;
constexpr double kSumAtol = 1e-4, kSumRtol = 1e-4;

// --- Registry, memory --------------------------------------------------------

TEST(CpuBackendTest, GetBackendReturnsOneCpuBackend) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Backend * a, GetBackend(Device::Cpu()));
  SLUICE_ASSERT_OK_AND_ASSIGN(Backend * b, GetBackend(Device::Cpu()));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->device(), Device::Cpu());
  EXPECT_EQ(GetBackend(Device::Gpu()).status().code(), StatusCode::kNotFound);
}

TEST(CpuBackendTest, NameCarriesVersionAndThreads) {
  const int old = Cpu()->num_threads();
  EXPECT_GE(old, 1);
  Cpu()->SetNumThreads(3);
  EXPECT_EQ(Cpu()->num_threads(), 3);
  EXPECT_NE(Cpu()->name().find("cpu (oneDNN 2."), std::string::npos) << Cpu()->name();
  EXPECT_NE(Cpu()->name().find(", 3 threads)"), std::string::npos) << Cpu()->name();
  Cpu()->SetNumThreads(old);
}

TEST(CpuBackendTest, ToDeviceAndToHostShareBytes) {
  Tensor h = Tensor::FromVector<float>({1, 2, 3}).value();
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor d, Cpu()->ToDevice(h));
  EXPECT_EQ(d.raw_data(), h.raw_data());
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor back, Cpu()->ToHost(d));
  EXPECT_EQ(back.raw_data(), h.raw_data());
  SLUICE_EXPECT_ERROR(Cpu()->ToDevice(Tensor::FromStrings({"a"}).value()),
                      StatusCode::kInvalidArgument, "string");
}

TEST(CpuBackendTest, AllocateIsAlignedAndCopiesWork) {
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor a, Cpu()->Allocate(DType::kFloat32, {3, 5}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw_data()) % 64, 0u);
  SLUICE_ASSERT_OK(Cpu()->CopyFromHost(
      Tensor::FromVector<float>(std::span<const float>(std::vector<float>(15, 2.5f)), {15}).value(),
      &a));
  DeviceTensor b = Alloc({15});
  SLUICE_ASSERT_OK(Cpu()->Copy(a, &b));
  EXPECT_EQ(Host(b), Vec(15, 2.5));
  DeviceTensor c = Alloc({14});
  SLUICE_EXPECT_ERROR(Cpu()->Copy(a, &c), StatusCode::kInvalidArgument, "[3,5]");
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor z, Cpu()->Zeros(DType::kInt64, {4}));
  EXPECT_EQ(Cpu()->ToHost(z).value().flat<int64_t>()[3], 0);
}

// --- Elementwise ---------------------------------------------------------------

TEST(CpuBackendTest, FillCastAxpbyMultiply) {
  for (int64_t n : {1, 17, 100000}) {  // the large size runs on several threads
    const Vec x = Random(n, 1), y0 = Random(n, 2);
    DeviceTensor dx = Dev(x, {n}), dy = Dev(y0, {n});
    SLUICE_ASSERT_OK(Cpu()->Axpby(0.5f, dx, -2.0f, &dy));
    Vec want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = 0.5 * x[i] - 2.0 * y0[i];
    ExpectNear(Host(dy), want, kElemAtol, kElemRtol, "Axpby");

    DeviceTensor nan = Dev(Vec(n, NAN), {n});  // beta 0 must ignore old values
    SLUICE_ASSERT_OK(Cpu()->Axpby(3.0f, dx, 0.0f, &nan));
    for (int64_t i = 0; i < n; ++i) want[i] = 3.0 * x[i];
    ExpectNear(Host(nan), want, kElemAtol, kElemRtol, "Axpby beta 0");

    SLUICE_ASSERT_OK(Cpu()->Multiply(dx, dx, &dx));  // in place
    for (int64_t i = 0; i < n; ++i) want[i] = x[i] * x[i];
    ExpectNear(Host(dx), want, kElemAtol, kElemRtol, "Multiply");

    SLUICE_ASSERT_OK(Cpu()->Fill(7.0f, &dx));
    EXPECT_EQ(Host(dx), Vec(n, 7.0));
  }
  std::vector<uint8_t> bytes = {0, 1, 255};
  DeviceTensor u = DevOf(bytes, {3});
  DeviceTensor f = Alloc({3});
  SLUICE_ASSERT_OK(Cpu()->Cast(u, 1.0f / 255, &f));
  ExpectNear(Host(f), {0.0, 1.0 / 255, 1.0}, kElemAtol, kElemRtol, "Cast uint8");
  std::vector<int64_t> ids = {-3, 4, 1 << 20};
  SLUICE_ASSERT_OK(Cpu()->Cast(DevOf(ids, {3}), 2.0f, &f));
  EXPECT_EQ(Host(f), (Vec{-6, 8, 2 << 20}));
}

TEST(CpuBackendTest, ElementwiseRejectsMismatchedShapes) {
  DeviceTensor a = Alloc({2, 3}), b = Alloc({3, 2});
  SLUICE_EXPECT_ERROR(
      Cpu()->Multiply(a, b, &a), StatusCode::kInvalidArgument,
      "Multiply: a and b differ in shape (a cpu:0 float32[2,3], b cpu:0 float32[3,2])");
  SLUICE_EXPECT_ERROR(Cpu()->Axpby(1, a, 1, &b), StatusCode::kInvalidArgument, "Axpby");
  DeviceTensor i = Cpu()->Allocate(DType::kInt32, {2, 3}).value();
  SLUICE_EXPECT_ERROR(Cpu()->Fill(1, &i), StatusCode::kInvalidArgument, "float32");
  SLUICE_EXPECT_ERROR(Cpu()->Fill(1, nullptr), StatusCode::kInvalidArgument, "x is null");
}

TEST(CpuBackendTest, DropoutMaskStatisticsAndDeterminism) {
  const int old = Cpu()->num_threads();
  const int64_t n = 200000;
  DeviceTensor m1 = Alloc({n}), m2 = Alloc({n}), m3 = Alloc({n});
  Cpu()->SetNumThreads(1);
  SLUICE_ASSERT_OK(Cpu()->DropoutMask(0.3f, 42, 7, &m1));
  Cpu()->SetNumThreads(2);
  SLUICE_ASSERT_OK(Cpu()->DropoutMask(0.3f, 42, 7, &m2));
  SLUICE_ASSERT_OK(Cpu()->DropoutMask(0.3f, 42, 8, &m3));
  Cpu()->SetNumThreads(old);
  const Vec a = Host(m1), b = Host(m2), c = Host(m3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int64_t kept = 0;
  for (double v : a) {
    ASSERT_TRUE(v == 0.0 || std::abs(v - 1.0 / 0.7) < 1e-6) << v;
    kept += v != 0.0;
  }
  // Binomial(200000, 0.7): sd ~ 205; 5 sd.
  EXPECT_NEAR(static_cast<double>(kept), 0.7 * n, 1025);
  SLUICE_EXPECT_ERROR(Cpu()->DropoutMask(1.0f, 1, 1, &m1), StatusCode::kInvalidArgument, "rate");
}

TEST(CpuBackendTest, ActivationsMatchReference) {
  for (Activation f : {Activation::kLinear, Activation::kRelu, Activation::kSigmoid,
                       Activation::kTanh, Activation::kSoftmax}) {
    for (Shape shape : {Shape{7}, Shape{3, 10}, Shape{300, 129}}) {
      const int64_t n = shape.num_elements(), c = shape.dim(shape.rank() - 1);
      const Vec x = Random(n, 3, -6, 6), dy = Random(n, 4);
      const int kind = static_cast<int>(f);
      const std::string what = std::string(ActivationName(f)) + shape.ToString();
      DeviceTensor dx = Dev(x, shape), y = Alloc(shape);
      SLUICE_ASSERT_OK(Cpu()->ActivationForward(f, dx, &y));
      const Vec yr = reference::Activation(kind, x, c);
      ExpectNear(Host(y), yr, kElemAtol, kElemRtol, what + " forward");
      SLUICE_ASSERT_OK(Cpu()->ActivationForward(f, dx, &dx));  // in place
      ExpectNear(Host(dx), yr, kElemAtol, kElemRtol, what + " forward in place");
      // Backward from the backend's y, in place over dy.
      DeviceTensor ddy = Dev(dy, shape);
      SLUICE_ASSERT_OK(Cpu()->ActivationBackward(f, y, ddy, &ddy));
      ExpectNear(Host(ddy), reference::ActivationBackward(kind, Host(y), dy, c), kElemAtol,
                 kElemRtol, what + " backward");
    }
  }
  DeviceTensor a = Alloc({2, 3}), b = Alloc({2, 4});
  SLUICE_EXPECT_ERROR(Cpu()->ActivationForward(Activation::kRelu, a, &b),
                      StatusCode::kInvalidArgument, "float32[2,4]");
}

// --- Dense ---------------------------------------------------------------------

TEST(CpuBackendTest, MatMulAllTransposesAndBeta) {
  struct Case {
    int64_t m, k, n;
  };
  for (Case s : {Case{1, 1, 1}, Case{3, 5, 7}, Case{64, 784, 128}, Case{33, 17, 65}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          const int64_t ar = ta ? s.k : s.m, ac = ta ? s.m : s.k;
          const int64_t br = tb ? s.n : s.k, bc = tb ? s.k : s.n;
          const Vec a = Random(ar * ac, 5), b = Random(br * bc, 6), c0 = Random(s.m * s.n, 7);
          DeviceTensor c = Dev(beta == 0 ? Vec(s.m * s.n, NAN) : c0, {s.m, s.n});
          SLUICE_ASSERT_OK(Cpu()->MatMul(Dev(a, {ar, ac}), ta, Dev(b, {br, bc}), tb, beta, &c));
          ExpectNear(Host(c), reference::MatMul(a, ar, ac, ta, b, br, bc, tb, beta, c0), kSumAtol,
                     kSumRtol,
                     "MatMul m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) +
                         " n=" + std::to_string(s.n) + " ta=" + std::to_string(ta) +
                         " tb=" + std::to_string(tb) + " beta=" + std::to_string(beta));
        }
      }
    }
  }
  DeviceTensor a = Alloc({4, 5}), b = Alloc({6, 7}), c = Alloc({4, 7});
  SLUICE_EXPECT_ERROR(Cpu()->MatMul(a, false, b, false, 0, &c), StatusCode::kInvalidArgument,
                      "MatMul: inner dimensions of a · b differ (a cpu:0 float32[4,5], b cpu:0 "
                      "float32[6,7]");
  DeviceTensor b2 = Alloc({5, 7}), c2 = Alloc({7, 4});
  SLUICE_EXPECT_ERROR(Cpu()->MatMul(a, false, b2, false, 0, &c2), StatusCode::kInvalidArgument,
                      "c must be [4,7]");
}

TEST(CpuBackendTest, BiasAddAndBiasGrad) {
  for (Shape shape : {Shape{5}, Shape{4, 3}, Shape{64, 26, 26, 32}}) {
    const int64_t n = shape.num_elements(), c = shape.dim(shape.rank() - 1);
    const Vec y0 = Random(n, 8), bias = Random(c, 9), db0 = Random(c, 10);
    DeviceTensor y = Dev(y0, shape);
    SLUICE_ASSERT_OK(Cpu()->BiasAdd(Dev(bias, {c}), &y));
    Vec want(n), wdb(c);
    for (int64_t i = 0; i < n; ++i) want[i] = y0[i] + bias[i % c];
    ExpectNear(Host(y), want, kElemAtol, kElemRtol, "BiasAdd " + shape.ToString());
    for (int64_t i = 0; i < n; ++i) wdb[i % c] += y0[i];
    for (int64_t j = 0; j < c; ++j) wdb[j] += 0.5 * db0[j];
    DeviceTensor db = Dev(db0, {c});
    SLUICE_ASSERT_OK(Cpu()->BiasGrad(Dev(y0, shape), 0.5f, &db));
    ExpectNear(Host(db), wdb, kSumAtol, kSumRtol, "BiasGrad " + shape.ToString());
  }
  DeviceTensor y = Alloc({4, 3});
  SLUICE_EXPECT_ERROR(Cpu()->BiasAdd(Alloc({4}), &y), StatusCode::kInvalidArgument,
                      "bias cpu:0 float32[4], y cpu:0 float32[4,3]");
}

// --- Losses --------------------------------------------------------------------

// Central finite differences of grad_scale · Σ reference loss.
Vec NumericGrad(const Vec& pred, const Vec& dense, int64_t n, int64_t c, bool logits,
                double scale) {
  Vec g(pred.size());
  for (size_t i = 0; i < pred.size(); ++i) {
    const double h = 1e-6;
    Vec p = pred, q = pred;
    p[i] += h;
    q[i] -= h;
    double lp = 0, lq = 0;
    for (double v : reference::CrossEntropy(p, dense, n, c, logits)) lp += v;
    for (double v : reference::CrossEntropy(q, dense, n, c, logits)) lq += v;
    g[i] = scale * (lp - lq) / (2 * h);
  }
  return g;
}

TEST(CpuBackendTest, CrossEntropyMatchesReferenceAndFiniteDifferences) {
  const int64_t n = 6, c = 5;
  std::vector<int32_t> ids32 = {0, 4, 2, 2, 1, 3};
  std::vector<int64_t> ids64(ids32.begin(), ids32.end());
  Vec onehot(n * c, 0.0);
  for (int64_t i = 0; i < n; ++i) onehot[i * c + ids32[i]] = 1.0;
  Vec soft = Random(n * c, 11, 0.0, 1.0);  // dense labels, rows need not sum to 1
  for (bool logits : {true, false}) {
    // Probabilities away from the clip bounds, rows not normalized (the
    // backend must renormalize them).
    const Vec pred = logits ? Random(n * c, 12, -4, 4) : Random(n * c, 13, 0.05, 0.9);
    struct Labels {
      std::string name;
      DeviceTensor t;
      Vec dense;
    };
    std::vector<Labels> all = {{"int32[n]", DevOf(ids32, {n}), onehot},
                               {"int64[n]", DevOf(ids64, {n}), onehot},
                               {"int32[n,1]", DevOf(ids32, {n, 1}), onehot},
                               {"int64[n,1]", DevOf(ids64, {n, 1}), onehot},
                               {"dense", Dev(soft, {n, c}), soft}};
    for (const Labels& l : all) {
      const std::string what = l.name + (logits ? " logits" : " probabilities");
      DeviceTensor loss = Alloc({n}), dpred = Alloc({n, c});
      SLUICE_ASSERT_OK(Cpu()->CrossEntropy(Dev(pred, {n, c}), l.t, logits, 0.25f, &loss, &dpred));
      ExpectNear(Host(loss), reference::CrossEntropy(pred, l.dense, n, c, logits), kElemAtol,
                 kElemRtol, what + " loss");
      ExpectNear(Host(dpred), NumericGrad(pred, l.dense, n, c, logits, 0.25), 1e-4, 1e-3,
                 what + " gradient");
      SLUICE_ASSERT_OK(Cpu()->CrossEntropy(Dev(pred, {n, c}), l.t, logits, 1.0f, &loss, nullptr));
    }
  }
}

TEST(CpuBackendTest, CrossEntropyClipZeroesGradientWhereItClips) {
  // Row 0: p[0] / Σp = 0.99999999 > 1 - 1e-7, clipped; row 1: 1e-9 < 1e-7.
  const Vec pred = {0.99999999, 0.00000001, 1e-9, 1.0};
  std::vector<int32_t> ids = {0, 0};
  DeviceTensor loss = Alloc({2}), dpred = Alloc({2, 2});
  SLUICE_ASSERT_OK(
      Cpu()->CrossEntropy(Dev(pred, {2, 2}), DevOf(ids, {2}), false, 1.0f, &loss, &dpred));
  const Vec l = Host(loss), g = Host(dpred);
  EXPECT_NEAR(l[0], -std::log(1 - 1e-7), 1e-6);
  EXPECT_NEAR(l[1], -std::log(1e-7), 1e-4);
  for (double v : g) EXPECT_EQ(v, 0.0);
}

TEST(CpuBackendTest, CrossEntropyRejectsBadLabels) {
  std::vector<int64_t> ids = {0, 1, 9};
  DeviceTensor pred = Alloc({3, 4}), loss = Alloc({3});
  SLUICE_EXPECT_ERROR(Cpu()->CrossEntropy(pred, DevOf(ids, {3}), true, 1, &loss, nullptr),
                      StatusCode::kInvalidArgument, "label 9 in row 2");
  std::vector<int32_t> neg = {0, -1, 0};
  SLUICE_EXPECT_ERROR(Cpu()->CrossEntropy(pred, DevOf(neg, {3}), true, 1, &loss, nullptr),
                      StatusCode::kInvalidArgument, "label -1 in row 1");
  SLUICE_EXPECT_ERROR(Cpu()->CrossEntropy(pred, Alloc({3, 5}), true, 1, &loss, nullptr),
                      StatusCode::kInvalidArgument, "labels cpu:0 float32[3,5]");
  DeviceTensor short_loss = Alloc({2});
  SLUICE_EXPECT_ERROR(Cpu()->CrossEntropy(pred, Alloc({3, 4}), true, 1, &short_loss, nullptr),
                      StatusCode::kInvalidArgument, "loss cpu:0 float32[2]");
}

TEST(CpuBackendTest, MeanSquaredError) {
  for (Shape shape : {Shape{5}, Shape{4, 3}, Shape{2, 3, 4}}) {
    const int64_t n = shape.dim(0), total = shape.num_elements();
    const Vec p = Random(total, 14), t = Random(total, 15);
    DeviceTensor loss = Alloc({n}), dpred = Alloc(shape);
    SLUICE_ASSERT_OK(Cpu()->MeanSquaredError(Dev(p, shape), Dev(t, shape), 0.5f, &loss, &dpred));
    ExpectNear(Host(loss), reference::MeanSquaredError(p, t, n), kElemAtol, kElemRtol, "MSE");
    Vec g(total);
    const double d = static_cast<double>(total / n);
    for (int64_t i = 0; i < total; ++i) g[i] = 0.5 * 2 * (p[i] - t[i]) / d;
    ExpectNear(Host(dpred), g, kElemAtol, kElemRtol, "MSE gradient");
  }
  DeviceTensor loss = Alloc({4});
  SLUICE_EXPECT_ERROR(Cpu()->MeanSquaredError(Alloc({4, 3}), Alloc({4, 2}), 1, &loss, nullptr),
                      StatusCode::kInvalidArgument, "float32[4,2]");
}

// --- Optimizers ----------------------------------------------------------------

TEST(CpuBackendTest, SgdMatchesKeras) {
  struct Case {
    float momentum;
    bool nesterov;
  };
  for (Case k : {Case{0, false}, Case{0.9f, false}, Case{0.9f, true}}) {
    const int64_t n = 50000;
    Vec var = Random(n, 16), vel(n, 0.0);
    DeviceTensor dvar = Dev(var, {n}), dvel = Dev(vel, {n});
    for (int step = 0; step < 4; ++step) {
      const Vec g = Random(n, 17 + step);
      SLUICE_ASSERT_OK(Cpu()->SgdUpdate(Dev(g, {n}), 0.1f, k.momentum, k.nesterov, &dvar,
                                        k.momentum == 0 ? nullptr : &dvel));
      reference::Sgd(g, 0.1f, k.momentum, k.nesterov, &var, &vel);
    }
    ExpectNear(Host(dvar), var, kElemAtol, kElemRtol, "SGD var");
    if (k.momentum != 0) ExpectNear(Host(dvel), vel, kElemAtol, kElemRtol, "SGD velocity");
  }
  DeviceTensor v = Alloc({3});
  SLUICE_EXPECT_ERROR(Cpu()->SgdUpdate(Alloc({3}), 0.1f, 0.9f, false, &v, nullptr),
                      StatusCode::kInvalidArgument, "velocity");
}

TEST(CpuBackendTest, AdamMatchesKeras) {
  const int64_t n = 70000;
  Vec var = Random(n, 20), m(n, 0.0), v(n, 0.0);
  DeviceTensor dvar = Dev(var, {n}), dm = Dev(m, {n}), dv = Dev(v, {n});
  AdamStep s;
  s.learning_rate = 0.01f;
  for (int64_t t = 1; t <= 5; ++t) {
    s.step = t;
    const Vec g = Random(n, 21 + t);
    SLUICE_ASSERT_OK(Cpu()->AdamUpdate(Dev(g, {n}), s, &dvar, &dm, &dv));
    reference::Adam(g, s.learning_rate, s.beta_1, s.beta_2, s.epsilon, t, &var, &m, &v);
  }
  ExpectNear(Host(dvar), var, kElemAtol, kElemRtol, "Adam var");
  ExpectNear(Host(dm), m, kElemAtol, kElemRtol, "Adam m");
  ExpectNear(Host(dv), v, 1e-9, kElemRtol, "Adam v");
  DeviceTensor small = Alloc({3});
  SLUICE_EXPECT_ERROR(Cpu()->AdamUpdate(Alloc({4}), s, &small, &small, &small),
                      StatusCode::kInvalidArgument, "AdamUpdate");
}

// --- Reductions ----------------------------------------------------------------

TEST(CpuBackendTest, SumAndArgMaxMatches) {
  for (int64_t n : {0, 3, 1000001}) {
    const Vec x = Random(n, 30);
    double want = 0;
    for (double v : x) want += v;
    SLUICE_ASSERT_OK_AND_ASSIGN(double got, Cpu()->Sum(Dev(x, {n})));
    EXPECT_NEAR(got, want, 1e-9 * (1 + n));
  }
  // Row 1 ties between classes 1 and 2: the first maximum (1) counts.
  const Vec scores = {0.1, 0.7, 0.2, 0.5, 0.9, 0.9, 0.3, 0.3, 0.1};
  std::vector<int32_t> ids = {1, 1, 2};
  SLUICE_ASSERT_OK_AND_ASSIGN(int64_t hits,
                              Cpu()->CountArgMaxMatches(Dev(scores, {3, 3}), DevOf(ids, {3})));
  EXPECT_EQ(hits, 2);
  std::vector<int64_t> ids64 = {1, 2, 0};
  SLUICE_ASSERT_OK_AND_ASSIGN(hits,
                              Cpu()->CountArgMaxMatches(Dev(scores, {3, 3}), DevOf(ids64, {3, 1})));
  EXPECT_EQ(hits, 2);
  const Vec dense = {0, 1, 0, 0, 0, 1, 1, 0, 0};
  SLUICE_ASSERT_OK_AND_ASSIGN(hits,
                              Cpu()->CountArgMaxMatches(Dev(scores, {3, 3}), Dev(dense, {3, 3})));
  EXPECT_EQ(hits, 2);
  SLUICE_EXPECT_ERROR(Cpu()->CountArgMaxMatches(Dev(scores, {3, 3}), DevOf(ids, {3, 1, 1})),
                      StatusCode::kInvalidArgument, "int32[3,1,1]");
}

// --- Convolution ---------------------------------------------------------------

struct ConvCase {
  Nhwc x;
  int kh, kw, cout, stride_h, stride_w;
  Padding padding;
};

std::string Describe(const ConvCase& k) {
  return "x [" + std::to_string(k.x.n) + "," + std::to_string(k.x.h) + "," + std::to_string(k.x.w) +
         "," + std::to_string(k.x.c) + "] kernel " + std::to_string(k.kh) + "x" +
         std::to_string(k.kw) + " -> " + std::to_string(k.cout) + " stride " +
         std::to_string(k.stride_h) + "," + std::to_string(k.stride_w) +
         (k.padding == Padding::kSame ? " same" : " valid");
}

TEST(CpuBackendTest, ConvolutionMatchesReference) {
  const std::vector<ConvCase> cases = {
      {{2, 7, 9, 1}, 3, 3, 4, 1, 1, Padding::kValid},
      {{2, 7, 9, 1}, 3, 3, 4, 1, 1, Padding::kSame},
      {{3, 11, 10, 3}, 5, 5, 8, 2, 2, Padding::kSame},
      {{3, 11, 10, 3}, 5, 5, 8, 2, 2, Padding::kValid},
      {{2, 9, 8, 3}, 3, 5, 2, 1, 2, Padding::kSame},  // rectangular kernel, mixed strides
      {{1, 6, 13, 1}, 2, 4, 3, 2, 1, Padding::kValid},
      {{2, 13, 13, 32}, 5, 5, 32, 1, 1, Padding::kValid},  // the tutorial CNN's second conv
      {{4, 28, 28, 1}, 3, 3, 32, 1, 1, Padding::kValid},   // and its first
  };
  for (const ConvCase& k : cases) {
    const std::string what = Describe(k);
    Window2D w{k.kh, k.kw, k.stride_h, k.stride_w, k.padding};
    const Vec x = Random(k.x.size(), 40), f = Random(int64_t{k.kh} * k.kw * k.x.c * k.cout, 41),
              bias = Random(k.cout, 42);
    Nhwc yd;
    const Vec want = reference::Conv2D(x, k.x, f, k.cout, &bias, w, &yd);
    const Shape xs{k.x.n, k.x.h, k.x.w, k.x.c}, fs{k.kh, k.kw, k.x.c, k.cout},
        ys{yd.n, yd.h, yd.w, yd.c};
    DeviceTensor dx = Dev(x, xs), df = Dev(f, fs), db = Dev(bias, {k.cout}), y = Alloc(ys);
    SLUICE_ASSERT_OK(Cpu()->Conv2DForward(dx, df, &db, w, &y));
    ExpectNear(Host(y), want, kSumAtol, kSumRtol, what + " forward");
    SLUICE_ASSERT_OK(Cpu()->Conv2DForward(dx, df, nullptr, w, &y));
    ExpectNear(Host(y), reference::Conv2D(x, k.x, f, k.cout, nullptr, w, &yd), kSumAtol, kSumRtol,
               what + " forward without bias");

    const Vec dy = Random(yd.size(), 43);
    DeviceTensor ddy = Dev(dy, ys), gx = Alloc(xs), gf = Alloc(fs), gb = Alloc({k.cout});
    SLUICE_ASSERT_OK(Cpu()->Conv2DBackwardData(ddy, df, w, &gx));
    ExpectNear(Host(gx), reference::Conv2DBackwardData(dy, yd, f, k.x, w), kSumAtol, kSumRtol,
               what + " backward data");
    Vec want_db;
    const Vec want_df = reference::Conv2DBackwardFilter(x, k.x, dy, yd, w, &want_db);
    SLUICE_ASSERT_OK(Cpu()->Conv2DBackwardFilter(dx, ddy, w, &gf, &gb));
    ExpectNear(Host(gf), want_df, kSumAtol, kSumRtol, what + " backward filter");
    ExpectNear(Host(gb), want_db, kSumAtol, kSumRtol, what + " backward bias");
    SLUICE_ASSERT_OK(Cpu()->Conv2DBackwardFilter(dx, ddy, w, &gf, nullptr));
    ExpectNear(Host(gf), want_df, kSumAtol, kSumRtol, what + " backward filter without bias");
  }
}

TEST(CpuBackendTest, ConvolutionRejectsBadShapes) {
  Window2D w{3, 3, 1, 1, Padding::kValid};
  DeviceTensor x = Alloc({2, 8, 8, 3}), f = Alloc({3, 3, 3, 4}), y = Alloc({2, 6, 6, 4});
  DeviceTensor wrong_y = Alloc({2, 8, 8, 4});
  SLUICE_EXPECT_ERROR(Cpu()->Conv2DForward(x, f, nullptr, w, &wrong_y),
                      StatusCode::kInvalidArgument,
                      "Conv2DForward: output must be [2,6,6,4] (x cpu:0 float32[2,8,8,3]");
  DeviceTensor f2 = Alloc({3, 3, 2, 4});
  SLUICE_EXPECT_ERROR(Cpu()->Conv2DForward(x, f2, nullptr, w, &y), StatusCode::kInvalidArgument,
                      "filter cpu:0 float32[3,3,2,4]");
  DeviceTensor bias = Alloc({5});
  SLUICE_EXPECT_ERROR(Cpu()->Conv2DForward(x, f, &bias, w, &y), StatusCode::kInvalidArgument,
                      "bias cpu:0 float32[5]");
  DeviceTensor dx = Alloc({2, 8, 8, 2});
  SLUICE_EXPECT_ERROR(Cpu()->Conv2DBackwardData(y, f, w, &dx), StatusCode::kInvalidArgument,
                      "Conv2DBackwardData");
  DeviceTensor df = Alloc({5, 5, 3, 4});
  SLUICE_EXPECT_ERROR(Cpu()->Conv2DBackwardFilter(x, y, w, &df, nullptr),
                      StatusCode::kInvalidArgument, "Conv2DBackwardFilter");
}

// --- Pooling -------------------------------------------------------------------

TEST(CpuBackendTest, PoolingMatchesReference) {
  struct Case {
    Nhwc x;
    Window2D w;
  };
  const std::vector<Case> cases = {
      {{2, 6, 6, 3}, {2, 2, 2, 2, Padding::kValid}},
      {{2, 7, 5, 3}, {2, 2, 2, 2, Padding::kSame}},  // odd sizes: padded last row/column
      {{1, 9, 8, 5}, {3, 3, 2, 2, Padding::kSame}},
      {{2, 9, 8, 5}, {3, 2, 1, 2, Padding::kValid}},
      {{1, 5, 5, 2}, {3, 3, 1, 1, Padding::kSame}},
      {{8, 26, 26, 32}, {2, 2, 2, 2, Padding::kValid}},
  };
  for (PoolMode mode : {PoolMode::kMax, PoolMode::kAverage}) {
    for (const Case& k : cases) {
      for (bool ties : {false, true}) {
        const std::string what = std::string(mode == PoolMode::kMax ? "max" : "avg") +
                                 (ties ? " ties " : " ") +
                                 Describe({k.x, k.w.kernel_h, k.w.kernel_w, static_cast<int>(k.x.c),
                                           k.w.stride_h, k.w.stride_w, k.w.padding});
        Vec x = Random(k.x.size(), 50);
        // Ties: values from {0, 1, 2} so most windows have several maxima.
        if (ties) {
          for (double& v : x) v = std::floor((v + 1) * 1.5);
        }
        Nhwc yd;
        const Vec want = reference::Pool2D(mode, x, k.x, k.w, &yd);
        const Shape xs{k.x.n, k.x.h, k.x.w, k.x.c}, ys{yd.n, yd.h, yd.w, yd.c};
        DeviceTensor dx = Dev(x, xs), y = Alloc(ys), ws;
        SLUICE_ASSERT_OK(Cpu()->Pool2DForward(mode, dx, k.w, &y, &ws));
        ExpectNear(Host(y), want, kElemAtol, kElemRtol, what + " forward");
        const Vec dy = Random(yd.size(), 51);
        DeviceTensor gx = Alloc(xs);
        SLUICE_ASSERT_OK(Cpu()->Pool2DBackward(mode, dx, y, Dev(dy, ys), ws, k.w, &gx));
        const Vec want_dx = reference::Pool2DBackward(mode, x, k.x, dy, k.w);
        ExpectNear(Host(gx), want_dx, kElemAtol, kElemRtol, what + " backward");
        // Without a workspace (forward ran for inference) the backward
        // recomputes it.
        SLUICE_ASSERT_OK(Cpu()->Pool2DForward(mode, dx, k.w, &y, nullptr));
        ExpectNear(Host(y), want, kElemAtol, kElemRtol, what + " inference forward");
        SLUICE_ASSERT_OK(Cpu()->Pool2DBackward(mode, dx, y, Dev(dy, ys), DeviceTensor(), k.w, &gx));
        ExpectNear(Host(gx), want_dx, kElemAtol, kElemRtol, what + " backward, no workspace");
      }
    }
  }
}

TEST(CpuBackendTest, MaxPoolGradientGoesToFirstMaximum) {
  // One 2x2 window of equal values: TensorFlow sends dy to the top-left.
  DeviceTensor x = Dev({5, 5, 5, 5}, {1, 2, 2, 1}), y = Alloc({1, 1, 1, 1}), ws;
  const Window2D w{2, 2, 2, 2, Padding::kValid};
  SLUICE_ASSERT_OK(Cpu()->Pool2DForward(PoolMode::kMax, x, w, &y, &ws));
  DeviceTensor dx = Alloc({1, 2, 2, 1});
  SLUICE_ASSERT_OK(Cpu()->Pool2DBackward(PoolMode::kMax, x, y, Dev({3}, {1, 1, 1, 1}), ws, w, &dx));
  EXPECT_EQ(Host(dx), (Vec{3, 0, 0, 0}));
  // Max at the end of the window, tie between the last two.
  x = Dev({1, 2, 7, 7}, {1, 2, 2, 1});
  SLUICE_ASSERT_OK(Cpu()->Pool2DForward(PoolMode::kMax, x, w, &y, &ws));
  SLUICE_ASSERT_OK(Cpu()->Pool2DBackward(PoolMode::kMax, x, y, Dev({3}, {1, 1, 1, 1}), ws, w, &dx));
  EXPECT_EQ(Host(dx), (Vec{0, 0, 3, 0}));
}

TEST(CpuBackendTest, PoolingRejectsBadShapes) {
  const Window2D w{2, 2, 2, 2, Padding::kValid};
  DeviceTensor x = Alloc({2, 6, 6, 3}), y = Alloc({2, 3, 3, 4});
  SLUICE_EXPECT_ERROR(Cpu()->Pool2DForward(PoolMode::kMax, x, w, &y, nullptr),
                      StatusCode::kInvalidArgument,
                      "Pool2DForward: output must be [2,3,3,3] (x cpu:0 float32[2,6,6,3], y "
                      "cpu:0 float32[2,3,3,4])");
  DeviceTensor good_y = Alloc({2, 3, 3, 3}), ws;
  SLUICE_ASSERT_OK(Cpu()->Pool2DForward(PoolMode::kMax, x, w, &good_y, &ws));
  DeviceTensor dx = Alloc({2, 6, 6, 3});
  DeviceTensor bad_ws = Cpu()->Allocate(DType::kUInt8, {3}).value();
  SLUICE_EXPECT_ERROR(Cpu()->Pool2DBackward(PoolMode::kMax, x, good_y, good_y, bad_ws, w, &dx),
                      StatusCode::kInvalidArgument, "workspace");
}

}  // namespace
}  // namespace sluice::nn
