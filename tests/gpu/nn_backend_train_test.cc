// The GPU nn backend's training methods (activations, losses, optimizer
// updates) against the CPU backend, and CrossEntropy's deferred bad-label
// error. Tolerance kElem throughout (nn_backend_test_util.h): the kernels
// round each step as nn/cpu/ does, so only expf/logf/tanhf's last bits
// (libm's against CUDA's) may differ.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nn_backend_test_util.h"

namespace sluice::gpu::testing {
namespace {

constexpr nn::Activation kActivations[] = {nn::Activation::kLinear, nn::Activation::kRelu,
                                           nn::Activation::kSigmoid, nn::Activation::kTanh,
                                           nn::Activation::kSoftmax};

template <typename T>
Tensor HostOf(const std::vector<T>& v, const Shape& shape) {
  return Tensor::FromVector<T>(std::span<const T>(v), shape).value();
}

// Class ids in [0, c), as int32 or int64 of `shape` ([n] or [n, 1]).
Tensor RandomIds(DType dtype, const Shape& shape, int64_t c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, c - 1);
  std::vector<int64_t> ids(shape.num_elements());
  for (int64_t& id : ids) id = dist(gen);
  if (dtype == DType::kInt64) return HostOf(ids, shape);
  return HostOf(std::vector<int32_t>(ids.begin(), ids.end()), shape);
}

struct LabelForm {
  const char* name;
  DType dtype;
  bool column;  // [n, 1] rather than [n] (sparse forms)
};
constexpr LabelForm kLabelForms[] = {{"int32 [n]", DType::kInt32, false},
                                     {"int64 [n]", DType::kInt64, false},
                                     {"int32 [n,1]", DType::kInt32, true},
                                     {"int64 [n,1]", DType::kInt64, true},
                                     {"float32 [n,c]", DType::kFloat32, false}};

class TrainTest : public NnBackendTest {
 protected:
  // Both backends fail alike: the same code, and the same message up to the
  // tensor list (all of it on the host device, where both say "cpu:0").
  void ExpectSameError(const Status& got, const Status& want) {
    ASSERT_FALSE(want.ok()) << "the CPU backend accepted the call";
    EXPECT_EQ(got.code(), want.code()) << got;
    std::string g(got.message()), w(want.message());
    if (!device_.is_cpu()) {
      w = w.substr(0, w.find(" ("));
      g = g.substr(0, w.size());
    }
    EXPECT_EQ(g, w);
  }

  // Labels of `form` for n rows of c classes.
  static Tensor RandomLabels(const LabelForm& form, int64_t n, int64_t c, uint32_t seed) {
    if (form.dtype == DType::kFloat32) {
      // Unnormalized weights, a third of them zero.
      Tensor t = RandomHost(Shape{n, c}, seed, -0.5f, 1.0f);
      for (float& w : t.flat<float>()) w = w < 0.0f ? 0.0f : w;
      return t;
    }
    return RandomIds(form.dtype, form.column ? Shape{n, 1} : Shape{n}, c, seed);
  }
};

using TrainActivationTest = TrainTest;
using TrainLossTest = TrainTest;
using TrainOptimizerTest = TrainTest;
SLUICE_NN_BACKEND_TEST_SUITE(TrainActivationTest);
SLUICE_NN_BACKEND_TEST_SUITE(TrainLossTest);
SLUICE_NN_BACKEND_TEST_SUITE(TrainOptimizerTest);

// --- Activations -------------------------------------------------------------

TEST_P(TrainActivationTest, ForwardAndBackwardAgreeWithCpu) {
  uint32_t seed = 1;
  for (nn::Activation f : kActivations) {
    for (const Shape& shape :
         {Shape{}, Shape{1}, Shape{7}, Shape{1, 1}, Shape{4, 9}, Shape{2, 3, 5}, Shape{2, 1, 3, 10},
          Shape{3, 1000}, Shape{0, 3}, Shape{3, 0}}) {
      if (f == nn::Activation::kSoftmax && shape.rank() == 0) continue;
      const std::string what = std::string(nn::ActivationName(f)) + " " + shape.ToString();
      SCOPED_TRACE(what);
      // [-8, 8): both branches of sigmoid, relu's zeros, tanh near saturation.
      Pair x = BothRandom(shape, seed++, -8.0f, 8.0f);
      Pair y = BothAlloc(shape);
      SLUICE_ASSERT_OK(gpu()->ActivationForward(f, x.gpu, &y.gpu));
      SLUICE_ASSERT_OK(cpu()->ActivationForward(f, x.cpu, &y.cpu));
      ExpectAgree(y, kElem, what + " forward");

      // Backward from the CPU's forward output, so both start from one y.
      Pair y0 = Both(cpu()->ToHost(y.cpu).value());
      Pair dy = BothRandom(shape, seed++);
      Pair dx = BothAlloc(shape);
      SLUICE_ASSERT_OK(gpu()->ActivationBackward(f, y0.gpu, dy.gpu, &dx.gpu));
      SLUICE_ASSERT_OK(cpu()->ActivationBackward(f, y0.cpu, dy.cpu, &dx.cpu));
      ExpectAgree(dx, kElem, what + " backward");
    }
  }
}

TEST_P(TrainActivationTest, InPlace) {
  const Shape shape{6, 17};
  uint32_t seed = 100;
  for (nn::Activation f : kActivations) {
    const std::string what(nn::ActivationName(f));
    Pair x = BothRandom(shape, seed++, -5.0f, 5.0f);
    SLUICE_ASSERT_OK(gpu()->ActivationForward(f, x.gpu, &x.gpu));  // y is x
    SLUICE_ASSERT_OK(cpu()->ActivationForward(f, x.cpu, &x.cpu));
    ExpectAgree(x, kElem, what + " forward in place");

    Pair y = Both(cpu()->ToHost(x.cpu).value());
    Pair dy = BothRandom(shape, seed++);
    SLUICE_ASSERT_OK(gpu()->ActivationBackward(f, y.gpu, dy.gpu, &dy.gpu));  // dx is dy
    SLUICE_ASSERT_OK(cpu()->ActivationBackward(f, y.cpu, dy.cpu, &dy.cpu));
    ExpectAgree(dy, kElem, what + " backward in place");
  }
}

// Softmax of rows with huge logits: the max is subtracted first, so no
// overflow; sigmoid and tanh saturate without NaN.
TEST_P(TrainActivationTest, ExtremeInputs) {
  const std::vector<float> v = {80.0f,   -80.0f, 0.0f,   88.0f,  -100.0f, 1e-30f,
                                -1e-30f, 30.0f,  -30.0f, 500.0f, -500.0f, 80.0f};
  for (nn::Activation f : kActivations) {
    const std::string what(nn::ActivationName(f));
    Pair x = Both(HostOf(v, Shape{3, 4}));
    Pair y = BothAlloc(Shape{3, 4});
    SLUICE_ASSERT_OK(gpu()->ActivationForward(f, x.gpu, &y.gpu));
    SLUICE_ASSERT_OK(cpu()->ActivationForward(f, x.cpu, &y.cpu));
    ExpectAgree(y, kElem, what);
    for (float e : GpuValues(y.gpu)) EXPECT_TRUE(std::isfinite(e)) << what;
  }
}

TEST_P(TrainActivationTest, RejectsBadArguments) {
  const auto f = nn::Activation::kRelu;
  Pair x = BothRandom(Shape{2, 3}, 1);
  Pair wrong = BothAlloc(Shape{3, 2});
  ExpectSameError(gpu()->ActivationForward(f, x.gpu, &wrong.gpu),
                  cpu()->ActivationForward(f, x.cpu, &wrong.cpu));
  ExpectSameError(gpu()->ActivationForward(f, x.gpu, nullptr),
                  cpu()->ActivationForward(f, x.cpu, nullptr));
  Pair ints = BothAlloc(Shape{2, 3}, DType::kInt32);
  ExpectSameError(gpu()->ActivationForward(f, ints.gpu, &x.gpu),
                  cpu()->ActivationForward(f, ints.cpu, &x.cpu));
  Pair scalar = BothRandom(Shape{}, 2);
  ExpectSameError(gpu()->ActivationForward(nn::Activation::kSoftmax, scalar.gpu, &scalar.gpu),
                  cpu()->ActivationForward(nn::Activation::kSoftmax, scalar.cpu, &scalar.cpu));
  ExpectSameError(
      gpu()->ActivationBackward(nn::Activation::kSoftmax, scalar.gpu, scalar.gpu, &scalar.gpu),
      cpu()->ActivationBackward(nn::Activation::kSoftmax, scalar.cpu, scalar.cpu, &scalar.cpu));
  Pair dy = BothRandom(Shape{2, 3}, 3);
  ExpectSameError(gpu()->ActivationBackward(f, x.gpu, dy.gpu, &wrong.gpu),
                  cpu()->ActivationBackward(f, x.cpu, dy.cpu, &wrong.cpu));
  ExpectSameError(gpu()->ActivationBackward(f, x.gpu, wrong.gpu, &dy.gpu),
                  cpu()->ActivationBackward(f, x.cpu, wrong.cpu, &dy.cpu));
  SLUICE_EXPECT_OK(gpu()->Synchronize());
}

// --- CrossEntropy ------------------------------------------------------------

TEST_P(TrainLossTest, CrossEntropyAgreesWithCpu) {
  uint32_t seed = 1;
  for (const LabelForm& form : kLabelForms) {
    for (bool from_logits : {true, false}) {
      for (float grad_scale : {1.0f, 0.25f}) {
        for (bool with_grad : {true, false}) {
          for (const auto& [n, c] :
               {std::pair<int64_t, int64_t>{1, 1}, {5, 1}, {1, 7}, {16, 10}, {3, 300}, {0, 4}}) {
            const std::string what = std::string(form.name) +
                                     (from_logits ? " logits" : " probabilities") + " scale " +
                                     std::to_string(grad_scale) + (with_grad ? " dpred" : "") +
                                     " [" + std::to_string(n) + "," + std::to_string(c) + "]";
            SCOPED_TRACE(what);
            // Logits in [-4, 4); probabilities unnormalized in [0.001, 1).
            Pair pred = from_logits ? BothRandom(Shape{n, c}, seed++, -4.0f, 4.0f)
                                    : BothRandom(Shape{n, c}, seed++, 0.001f, 1.0f);
            Pair labels = Both(RandomLabels(form, n, c, seed++));
            Pair loss = BothAlloc(Shape{n});
            Pair dpred = BothAlloc(Shape{n, c});
            SLUICE_ASSERT_OK(gpu()->CrossEntropy(pred.gpu, labels.gpu, from_logits, grad_scale,
                                                 &loss.gpu, with_grad ? &dpred.gpu : nullptr));
            SLUICE_ASSERT_OK(cpu()->CrossEntropy(pred.cpu, labels.cpu, from_logits, grad_scale,
                                                 &loss.cpu, with_grad ? &dpred.cpu : nullptr));
            ExpectAgree(loss, kElem, what + " loss");
            if (with_grad) ExpectAgree(dpred, kElem, what + " dpred");
          }
        }
      }
    }
  }
}

// Logits of ±80 (e^80 overflows nothing after the max is subtracted) and
// probabilities that are clipped at both ends: finite losses, gradients
// zero where the clip holds (as the CPU backend's).
TEST_P(TrainLossTest, CrossEntropyExtremeInputs) {
  const std::vector<float> logits = {80.0f,  -80.0f, 0.0f,   -80.0f, 80.0f, 80.0f,
                                     -80.0f, -80.0f, -80.0f, 1e-3f,  80.0f, -80.0f};
  const std::vector<float> probabilities = {0.99999999f, 1e-8f, 0.0f, 1e-9f, 1.0f, 0.0f,
                                            0.3f,        0.3f,  0.4f, 0.0f,  0.0f, 2.0f};
  uint32_t seed = 50;
  for (const LabelForm& form : kLabelForms) {
    for (bool from_logits : {true, false}) {
      const std::string what =
          std::string(form.name) + (from_logits ? " logits" : " probabilities");
      SCOPED_TRACE(what);
      Pair pred = Both(HostOf(from_logits ? logits : probabilities, Shape{4, 3}));
      Pair labels = Both(RandomLabels(form, 4, 3, seed++));
      Pair loss = BothAlloc(Shape{4});
      Pair dpred = BothAlloc(Shape{4, 3});
      SLUICE_ASSERT_OK(
          gpu()->CrossEntropy(pred.gpu, labels.gpu, from_logits, 0.5f, &loss.gpu, &dpred.gpu));
      SLUICE_ASSERT_OK(
          cpu()->CrossEntropy(pred.cpu, labels.cpu, from_logits, 0.5f, &loss.cpu, &dpred.cpu));
      ExpectAgree(loss, kElem, what + " loss");
      ExpectAgree(dpred, kElem, what + " dpred");
      for (float v : GpuValues(loss.gpu)) EXPECT_TRUE(std::isfinite(v)) << what;
      for (float v : GpuValues(dpred.gpu)) EXPECT_TRUE(std::isfinite(v)) << what;
    }
  }
}

// The CPU test of the same name: q above 1 - 1e-7 in row 0 and below 1e-7
// in row 1 are clipped, and the gradient through the clip is exactly zero.
TEST_P(TrainLossTest, CrossEntropyClipZeroesGradientWhereItClips) {
  Pair pred = Both(HostOf(std::vector<float>{0.99999999f, 0.00000001f, 1e-9f, 1.0f}, Shape{2, 2}));
  Pair labels = Both(HostOf(std::vector<int32_t>{0, 0}, Shape{2}));
  Pair loss = BothAlloc(Shape{2}), dpred = BothAlloc(Shape{2, 2});
  SLUICE_ASSERT_OK(gpu()->CrossEntropy(pred.gpu, labels.gpu, false, 1.0f, &loss.gpu, &dpred.gpu));
  SLUICE_ASSERT_OK(cpu()->CrossEntropy(pred.cpu, labels.cpu, false, 1.0f, &loss.cpu, &dpred.cpu));
  ExpectAgree(loss, kElem, "loss");
  const std::vector<float> l = GpuValues(loss.gpu);
  EXPECT_NEAR(l[0], -std::log(1 - 1e-7), 1e-6);
  EXPECT_NEAR(l[1], -std::log(1e-7), 1e-4);
  for (float g : GpuValues(dpred.gpu)) EXPECT_EQ(g, 0.0f);
}

// Class ids are device memory: a bad one is found by the kernel, the call
// returns OK, and the next wait reports it once. The row's loss is NaN and
// its dpred row zero; the other rows are computed.
TEST_P(TrainLossTest, CrossEntropyBadClassIdIsReportedAtTheNextWait) {
  const int64_t n = 4, c = 3;
  for (DType dtype : {DType::kInt32, DType::kInt64}) {
    for (int64_t bad : {int64_t{3}, int64_t{-1}}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " " + std::to_string(bad));
      std::vector<int64_t> ids = {0, 2, bad, 1};
      Tensor host = dtype == DType::kInt64
                        ? HostOf(ids, Shape{n})
                        : HostOf(std::vector<int32_t>(ids.begin(), ids.end()), Shape{n});
      SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor labels, gpu()->ToDevice(host));
      Pair pred = BothRandom(Shape{n, c}, 7, -2.0f, 2.0f);
      Pair loss = BothAlloc(Shape{n}), dpred = BothAlloc(Shape{n, c});
      SLUICE_ASSERT_OK(gpu()->CrossEntropy(pred.gpu, labels, true, 1.0f, &loss.gpu, &dpred.gpu));
      SLUICE_EXPECT_ERROR(
          gpu()->Synchronize(), StatusCode::kInvalidArgument,
          "CrossEntropy: label " + std::to_string(bad) + " in row 2 is outside [0, 3)");
      SLUICE_EXPECT_OK(gpu()->Synchronize());  // reported once

      // The other rows as the CPU computes them (with row 2's id made valid).
      ids[2] = 0;
      Pair good = Both(HostOf(ids, Shape{n}));
      SLUICE_ASSERT_OK(cpu()->CrossEntropy(pred.cpu, good.cpu, true, 1.0f, &loss.cpu, &dpred.cpu));
      const std::vector<float> gl = GpuValues(loss.gpu), cl = CpuValues(loss.cpu);
      const std::vector<float> gd = GpuValues(dpred.gpu), cd = CpuValues(dpred.cpu);
      for (int64_t i = 0; i < n; ++i) {
        if (i == 2) {
          EXPECT_TRUE(std::isnan(gl[i])) << gl[i];
          for (int64_t j = 0; j < c; ++j) EXPECT_EQ(gd[i * c + j], 0.0f);
          continue;
        }
        ExpectClose({gl[i]}, {cl[i]}, kElem, "loss row " + std::to_string(i));
        ExpectClose({gd.begin() + i * c, gd.begin() + (i + 1) * c},
                    {cd.begin() + i * c, cd.begin() + (i + 1) * c}, kElem,
                    "dpred row " + std::to_string(i));
      }

      // A valid call afterwards works and waits cleanly.
      SLUICE_ASSERT_OK(gpu()->CrossEntropy(pred.gpu, good.gpu, true, 1.0f, &loss.gpu, &dpred.gpu));
      SLUICE_ASSERT_OK(gpu()->Synchronize());
      ExpectAgree(loss, kElem, "valid call after the error");
    }
  }
}

// Any waiting call reports it (here ToHost); with several bad rows, one of
// them is named (the first on the host device; any on a GPU, where the
// rows race for the record).
TEST_P(TrainLossTest, CrossEntropyBadClassIdWithSeveralBadRows) {
  Pair pred = BothRandom(Shape{5, 4}, 8);
  SLUICE_ASSERT_OK_AND_ASSIGN(
      DeviceTensor labels,
      gpu()->ToDevice(HostOf(std::vector<int32_t>{0, 7, 1, -5, 4}, Shape{5, 1})));
  Pair loss = BothAlloc(Shape{5});
  SLUICE_ASSERT_OK(gpu()->CrossEntropy(pred.gpu, labels, false, 1.0f, &loss.gpu, nullptr));
  Result<Tensor> host = gpu()->ToHost(loss.gpu);
  ASSERT_EQ(host.status().code(), StatusCode::kInvalidArgument) << host.status();
  const std::string msg(host.status().message());
  if (device_.is_cpu()) {
    EXPECT_NE(msg.find("label 7 in row 1 is outside [0, 4)"), std::string::npos) << msg;
  } else {
    EXPECT_TRUE(msg.find("label 7 in row 1") != std::string::npos ||
                msg.find("label -5 in row 3") != std::string::npos ||
                msg.find("label 4 in row 4") != std::string::npos)
        << msg;
  }
  const std::vector<float> l = GpuValues(loss.gpu);
  for (int i : {1, 3, 4}) EXPECT_TRUE(std::isnan(l[i])) << i;
  for (int i : {0, 2}) EXPECT_TRUE(std::isfinite(l[i])) << i;
  SLUICE_EXPECT_OK(gpu()->Synchronize());
}

TEST_P(TrainLossTest, CrossEntropyRejectsBadArguments) {
  Pair pred = BothRandom(Shape{3, 4}, 1);
  Pair loss = BothAlloc(Shape{3});
  Pair short_loss = BothAlloc(Shape{2});
  Pair dense = BothRandom(Shape{3, 4}, 2, 0.0f, 1.0f);
  Pair dense_wrong = BothRandom(Shape{3, 5}, 3, 0.0f, 1.0f);
  Pair ids_wrong = Both(RandomIds(DType::kInt32, Shape{3, 2}, 4, 4));
  Pair ids_short = Both(RandomIds(DType::kInt64, Shape{2}, 4, 5));
  Pair bytes = BothAlloc(Shape{3}, DType::kUInt8);
  Pair dpred_wrong = BothAlloc(Shape{4, 3});
  Pair pred3 = BothRandom(Shape{3, 4, 1}, 6);
  Pair pred0 = BothAlloc(Shape{3, 0});
  auto same = [&](Pair& p, Pair& labels, Pair* l, Pair* dp) {
    ExpectSameError(gpu()->CrossEntropy(p.gpu, labels.gpu, true, 1.0f, l ? &l->gpu : nullptr,
                                        dp ? &dp->gpu : nullptr),
                    cpu()->CrossEntropy(p.cpu, labels.cpu, true, 1.0f, l ? &l->cpu : nullptr,
                                        dp ? &dp->cpu : nullptr));
  };
  same(pred, dense_wrong, &loss, nullptr);  // float labels of the wrong shape
  same(pred, dense, &short_loss, nullptr);
  same(pred, ids_wrong, &loss, nullptr);
  same(pred, ids_short, &loss, nullptr);
  same(pred, bytes, &loss, nullptr);  // wrong label dtype
  same(pred, dense, &loss, &dpred_wrong);
  same(pred, dense, nullptr, nullptr);
  same(pred3, dense, &loss, nullptr);
  same(pred0, dense, &loss, nullptr);
  SLUICE_EXPECT_OK(gpu()->Synchronize());  // nothing deferred
}

// --- MeanSquaredError --------------------------------------------------------

TEST_P(TrainLossTest, MeanSquaredErrorAgreesWithCpu) {
  uint32_t seed = 1;
  for (const Shape& shape : {Shape{1}, Shape{9}, Shape{4, 3}, Shape{2, 3, 4}, Shape{3, 2, 2, 5},
                             Shape{1, 1000}, Shape{0, 3}, Shape{3, 0}}) {
    for (float grad_scale : {1.0f, 0.125f}) {
      for (bool with_grad : {true, false}) {
        const std::string what =
            shape.ToString() + " scale " + std::to_string(grad_scale) + (with_grad ? " dpred" : "");
        SCOPED_TRACE(what);
        Pair pred = BothRandom(shape, seed++, -3.0f, 3.0f);
        Pair target = BothRandom(shape, seed++, -3.0f, 3.0f);
        Pair loss = BothAlloc(Shape{shape.dim(0)});
        Pair dpred = BothAlloc(shape);
        SLUICE_ASSERT_OK(gpu()->MeanSquaredError(pred.gpu, target.gpu, grad_scale, &loss.gpu,
                                                 with_grad ? &dpred.gpu : nullptr));
        SLUICE_ASSERT_OK(cpu()->MeanSquaredError(pred.cpu, target.cpu, grad_scale, &loss.cpu,
                                                 with_grad ? &dpred.cpu : nullptr));
        ExpectAgree(loss, kElem, what + " loss");
        if (with_grad) ExpectAgree(dpred, kElem, what + " dpred");
      }
    }
  }
}

TEST_P(TrainLossTest, MeanSquaredErrorRejectsBadArguments) {
  Pair pred = BothRandom(Shape{3, 4}, 1);
  Pair target_wrong = BothRandom(Shape{4, 3}, 2);
  Pair target = BothRandom(Shape{3, 4}, 3);
  Pair loss = BothAlloc(Shape{3}), loss_wrong = BothAlloc(Shape{4});
  Pair dpred_wrong = BothAlloc(Shape{12});
  Pair scalar = BothRandom(Shape{}, 4);
  ExpectSameError(gpu()->MeanSquaredError(pred.gpu, target_wrong.gpu, 1, &loss.gpu, nullptr),
                  cpu()->MeanSquaredError(pred.cpu, target_wrong.cpu, 1, &loss.cpu, nullptr));
  ExpectSameError(gpu()->MeanSquaredError(pred.gpu, target.gpu, 1, &loss_wrong.gpu, nullptr),
                  cpu()->MeanSquaredError(pred.cpu, target.cpu, 1, &loss_wrong.cpu, nullptr));
  ExpectSameError(gpu()->MeanSquaredError(pred.gpu, target.gpu, 1, &loss.gpu, &dpred_wrong.gpu),
                  cpu()->MeanSquaredError(pred.cpu, target.cpu, 1, &loss.cpu, &dpred_wrong.cpu));
  ExpectSameError(gpu()->MeanSquaredError(scalar.gpu, scalar.gpu, 1, &loss.gpu, nullptr),
                  cpu()->MeanSquaredError(scalar.cpu, scalar.cpu, 1, &loss.cpu, nullptr));
  ExpectSameError(gpu()->MeanSquaredError(pred.gpu, target.gpu, 1, nullptr, nullptr),
                  cpu()->MeanSquaredError(pred.cpu, target.cpu, 1, nullptr, nullptr));
}

// --- Optimizer updates -------------------------------------------------------

TEST_P(TrainOptimizerTest, SgdAgreesWithCpuOverSeveralSteps) {
  struct Mode {
    const char* name;
    float momentum;
    bool nesterov, velocity;
  };
  uint32_t seed = 1;
  for (const Mode& mode :
       {Mode{"plain", 0.0f, false, false}, Mode{"momentum 0 with velocity", 0.0f, false, true},
        Mode{"momentum", 0.9f, false, true}, Mode{"nesterov", 0.9f, true, true},
        Mode{"nesterov 0.5", 0.5f, true, true}}) {
    for (const Shape& shape : {Shape{}, Shape{1}, Shape{33}, Shape{5, 7}, Shape{0, 4}}) {
      const std::string what = std::string(mode.name) + " " + shape.ToString();
      SCOPED_TRACE(what);
      Pair var = BothRandom(shape, seed++);
      Pair velocity = Both(Tensor::Zeros(DType::kFloat32, shape).value());
      for (int step = 0; step < 4; ++step) {
        Pair grad = BothRandom(shape, seed++, -2.0f, 2.0f);
        SLUICE_ASSERT_OK(gpu()->SgdUpdate(grad.gpu, 0.05f, mode.momentum, mode.nesterov, &var.gpu,
                                          mode.velocity ? &velocity.gpu : nullptr));
        SLUICE_ASSERT_OK(cpu()->SgdUpdate(grad.cpu, 0.05f, mode.momentum, mode.nesterov, &var.cpu,
                                          mode.velocity ? &velocity.cpu : nullptr));
      }
      ExpectAgree(var, kElem, what + " var");
      if (mode.velocity) ExpectAgree(velocity, kElem, what + " velocity");
    }
  }
}

TEST_P(TrainOptimizerTest, AdamAgreesWithCpuOverSeveralSteps) {
  uint32_t seed = 1;
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{37}, Shape{6, 5}, Shape{0}}) {
    for (const nn::AdamStep& hyper :
         {nn::AdamStep{},
          nn::AdamStep{
              .learning_rate = 0.01f, .beta_1 = 0.8f, .beta_2 = 0.99f, .epsilon = 1e-4f}}) {
      const std::string what = shape.ToString() + " lr " + std::to_string(hyper.learning_rate);
      SCOPED_TRACE(what);
      Pair var = BothRandom(shape, seed++);
      Pair m = Both(Tensor::Zeros(DType::kFloat32, shape).value());
      Pair v = Both(Tensor::Zeros(DType::kFloat32, shape).value());
      // Steps 1..5, then a jump to a late step where β^t has underflowed.
      for (int64_t t : {1, 2, 3, 4, 5, 10000}) {
        nn::AdamStep step = hyper;
        step.step = t;
        Pair grad = BothRandom(shape, seed++, -1.0f, 1.0f);
        SLUICE_ASSERT_OK(gpu()->AdamUpdate(grad.gpu, step, &var.gpu, &m.gpu, &v.gpu));
        SLUICE_ASSERT_OK(cpu()->AdamUpdate(grad.cpu, step, &var.cpu, &m.cpu, &v.cpu));
        ExpectAgree(var, kElem, what + " var at step " + std::to_string(t));
      }
      ExpectAgree(m, kElem, what + " m");
      ExpectAgree(v, kElem, what + " v");
    }
  }
}

TEST_P(TrainOptimizerTest, RejectsBadArguments) {
  Pair grad = BothRandom(Shape{4}, 1);
  Pair var = BothRandom(Shape{4}, 2), wrong = BothRandom(Shape{5}, 3);
  Pair m = BothAlloc(Shape{4}), v = BothAlloc(Shape{4});
  ExpectSameError(gpu()->SgdUpdate(grad.gpu, 0.1f, 0.9f, false, &var.gpu, nullptr),
                  cpu()->SgdUpdate(grad.cpu, 0.1f, 0.9f, false, &var.cpu, nullptr));
  ExpectSameError(gpu()->SgdUpdate(grad.gpu, 0.1f, 0.0f, false, &wrong.gpu, nullptr),
                  cpu()->SgdUpdate(grad.cpu, 0.1f, 0.0f, false, &wrong.cpu, nullptr));
  ExpectSameError(gpu()->SgdUpdate(grad.gpu, 0.1f, 0.9f, true, &var.gpu, &wrong.gpu),
                  cpu()->SgdUpdate(grad.cpu, 0.1f, 0.9f, true, &var.cpu, &wrong.cpu));
  ExpectSameError(gpu()->SgdUpdate(grad.gpu, 0.1f, 0.0f, false, nullptr, nullptr),
                  cpu()->SgdUpdate(grad.cpu, 0.1f, 0.0f, false, nullptr, nullptr));
  nn::AdamStep step;
  ExpectSameError(gpu()->AdamUpdate(grad.gpu, step, &var.gpu, &m.gpu, &wrong.gpu),
                  cpu()->AdamUpdate(grad.cpu, step, &var.cpu, &m.cpu, &wrong.cpu));
  ExpectSameError(gpu()->AdamUpdate(grad.gpu, step, &var.gpu, nullptr, &v.gpu),
                  cpu()->AdamUpdate(grad.cpu, step, &var.cpu, nullptr, &v.cpu));
  step.step = 0;
  ExpectSameError(gpu()->AdamUpdate(grad.gpu, step, &var.gpu, &m.gpu, &v.gpu),
                  cpu()->AdamUpdate(grad.cpu, step, &var.cpu, &m.cpu, &v.cpu));
  // Nothing was written by the rejected calls.
  ExpectAgree(var, Tolerance{0, 0}, "var after rejected calls");
}

}  // namespace
}  // namespace sluice::gpu::testing
