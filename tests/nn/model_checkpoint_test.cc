// Model-level checkpoint interop: sluice's Sequential + optimizers restore
// Keras 3 checkpoints (golden files made by
// tests/interop/make_keras_model_checkpoints.py) and their own, deferred
// (before the model is built) and including the optimizer state.
// tests/interop/model_interop.sh checks the other direction with TensorFlow.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/nn/backend.h"
#include "sluice/nn/checkpoint.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/losses.h"
#include "sluice/nn/optimizers.h"
#include "sluice/nn/sequential.h"
#include "sluice/nn/variable.h"
#include "sluice/records/tensor_bundle.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

using ::sluice::testing::ScratchDir;
using ::sluice::testing::TestDataPath;

constexpr char kValue[] = "/.ATTRIBUTES/VARIABLE_VALUE";

// expected.txt: one tensor a line, "<name> <d0,d1,...|scalar> <values>".
struct Named {
  std::vector<int64_t> dims;
  std::vector<double> values;
};

std::map<std::string, Named> ReadTensors(const std::string& path) {
  std::map<std::string, Named> out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string name, dims;
    s >> name >> dims;
    Named n;
    if (dims != "scalar") {
      std::istringstream d(dims);
      std::string dim;
      while (std::getline(d, dim, ',')) n.dims.push_back(std::stoll(dim));
    }
    double v;
    while (s >> v) n.values.push_back(v);
    out[name] = std::move(n);
  }
  return out;
}

Tensor FloatTensor(const Named& n) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, Shape(n.dims));
  auto f = t.flat<float>();
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(n.values[i]);
  return t;
}

// sin(0.37 i + phase), as make_keras_model_checkpoints.py's fixed_input().
Tensor FixedInput(const Shape& shape, double phase) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, shape);
  auto f = t.flat<float>();
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(std::sin(0.37 * i + phase));
  return t;
}

Tensor Labels(int64_t n, int classes) {
  Tensor t = *Tensor::Zeros(DType::kInt32, Shape{n});
  for (int64_t i = 0; i < n; ++i) t.flat<int32_t>()[i] = static_cast<int32_t>(i % classes);
  return t;
}

std::vector<float> Floats(const Tensor& t) {
  auto f = t.flat<float>();
  return {f.begin(), f.end()};
}

std::vector<float> Values(const Variable& v) {
  Result<Tensor> t = v.Read();
  EXPECT_TRUE(t.ok()) << t.status();
  return Floats(*t);
}

void WriteTensor(std::ostream& out, const std::string& name, const Tensor& t) {
  out << name << " ";
  if (t.shape().rank() == 0) out << "scalar";
  for (int i = 0; i < t.shape().rank(); ++i) out << (i ? "," : "") << t.shape().dim(i);
  char buf[32];
  for (float v : t.flat<float>()) {
    std::snprintf(buf, sizeof buf, " %.9g", v);
    out << buf;
  }
  out << "\n";
}

// The architectures of make_keras_model_checkpoints.py. Input shapes come
// from the first call.
enum class Arch { kMlp, kCnn, kTutorial };

struct Model {
  Sequential model;
  std::shared_ptr<Optimizer> optimizer;
  Shape example;  // one example's shape
  int classes = 3;
};

std::unique_ptr<Model> MakeModel(Arch arch) {
  auto m = std::make_unique<Model>();
  const DenseOptions relu{.activation = Activation::kRelu};
  bool from_logits = true;
  switch (arch) {
    case Arch::kMlp:
      m->model.Add<Flatten>();
      m->model.Add<Dense>(8, relu);
      m->model.Add<Dense>(3);
      m->optimizer = std::make_shared<Adam>(0.01f);
      m->example = Shape{4, 4};
      break;
    case Arch::kCnn:
      m->model.Add<Conv2D>(4, 3, Conv2DOptions{.activation = Activation::kRelu});
      m->model.Add<MaxPooling2D>();
      m->model.Add<Conv2D>(
          4, 3, Conv2DOptions{.padding = Padding::kSame, .activation = Activation::kRelu});
      m->model.Add<Flatten>();
      m->model.Add<Dense>(3, DenseOptions{.activation = Activation::kSoftmax});
      m->optimizer = std::make_shared<SGD>(0.05f, 0.9f);
      m->example = Shape{8, 8, 1};
      from_logits = false;
      break;
    case Arch::kTutorial:
      m->model.Add<Flatten>();
      m->model.Add<Dense>(128, relu);
      m->model.Add<Dense>(10);
      m->optimizer = std::make_shared<Adam>();
      m->example = Shape{28, 28};
      m->classes = 10;
      break;
  }
  EXPECT_TRUE(m->model
                  .Compile({.optimizer = m->optimizer,
                            .loss = std::make_shared<SparseCategoricalCrossentropy>(from_logits)})
                  .ok());
  return m;
}

Shape Batch(const Model& m, int64_t n) {
  std::vector<int64_t> dims = {n};
  for (int64_t d : m.example.dims()) dims.push_back(d);
  return Shape(dims);
}

// The optimizer's `_variables/<i>` (0 iterations, 1 learning rate, then the
// per-variable state in Keras's order).
Variable* OptimizerVariable(Optimizer& opt, int i) {
  for (const Trackable::Child& c : opt.TrackableChildren()) {
    if (c.name != "_variables") continue;
    std::vector<Trackable::Child> items = c.object->TrackableChildren();
    if (i >= static_cast<int>(items.size())) return nullptr;
    return dynamic_cast<Variable*>(items[i].object);
  }
  return nullptr;
}

void ExpectNear(const std::vector<float>& got, const Named& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.values.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want.values[i], rel * std::max(1.0, std::abs(want.values[i])))
        << what << " [" << i << "]";
  }
}

// Restores the golden Keras checkpoint in `folder` before the model is
// built, predicts, then checks the optimizer state arrives with the slots:
// slot_new = a·slot_restored + b·grad (Adam's m: 0.9, 0.1; SGD's momentum:
// 0.9, -lr).
void CheckKerasGolden(Arch arch, const std::string& folder, float a, float b) {
  const std::string dir = TestDataPath(folder);
  const std::map<std::string, Named> expected = ReadTensors(dir + "/expected.txt");
  ASSERT_TRUE(expected.contains("input") && expected.contains("predictions"));
  std::unique_ptr<Model> m = MakeModel(arch);
  Checkpoint c;
  SLUICE_ASSERT_OK(c.Track("model", &m->model));
  SLUICE_ASSERT_OK(c.Track("optimizer", m->optimizer.get()));
  ASSERT_EQ(LatestCheckpoint(dir), dir + "/ckpt-1");
  SLUICE_ASSERT_OK_AND_ASSIGN(RestoreResult r, c.Restore(dir + "/ckpt-1"));
  EXPECT_FALSE(m->model.layers()[0]->built());  // deferred
  EXPECT_EQ(m->optimizer->iterations(),
            static_cast<int64_t>(expected.at("iterations").values.at(0)));

  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor pred, m->model.Predict(FloatTensor(expected.at("input"))));
  ExpectNear(Floats(pred), expected.at("predictions"), 1e-5, "predictions");
  SLUICE_EXPECT_OK(r.AssertExistingObjectsMatched());
  EXPECT_FALSE(r.AssertConsumed().ok());  // the optimizer's slots do not exist yet

  // The first kernel's slot in the checkpoint, and a step by hand.
  SLUICE_ASSERT_OK_AND_ASSIGN(BundleReader reader, BundleReader::Open(dir + "/ckpt-1"));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor slot0,
                              reader.Lookup(std::string("optimizer/_variables/2") + kValue));
  const Tensor x = FixedInput(Batch(*m, 3), 2.0);
  SLUICE_ASSERT_OK_AND_ASSIGN(Sequential::Gradients g, m->model.ComputeGradients(x, Labels(3, 3)));
  SLUICE_ASSERT_OK_AND_ASSIGN(Backend * backend, GetBackend(g.grads[0]->device()));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor grad0_view, backend->ToHost(*g.grads[0]));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor grad0, grad0_view.Clone());
  SLUICE_ASSERT_OK(m->optimizer->ApplyGradients(std::span<DeviceTensor* const>(g.grads),
                                                std::span<Variable* const>(g.variables)));
  SLUICE_EXPECT_OK(r.AssertConsumed());
  EXPECT_EQ(m->optimizer->iterations(),
            static_cast<int64_t>(expected.at("iterations").values.at(0)) + 1);
  Variable* slot = OptimizerVariable(*m->optimizer, 2);
  ASSERT_NE(slot, nullptr);
  const std::vector<float> got = Values(*slot);
  ASSERT_EQ(got.size(), static_cast<size_t>(slot0.num_elements()));
  bool nonzero = false;
  for (size_t i = 0; i < got.size(); ++i) {
    const float old = slot0.flat<float>()[i];
    nonzero = nonzero || old != 0;
    EXPECT_NEAR(got[i], a * old + b * grad0.flat<float>()[i], 1e-6) << i;
  }
  EXPECT_TRUE(nonzero) << "the golden slot is all zeros";
}

TEST(ModelCheckpointTest, KerasGoldenMlpAdam) {
  CheckKerasGolden(Arch::kMlp, "nn/keras_mlp_adam", 0.9f, 0.1f);
}

TEST(ModelCheckpointTest, KerasGoldenCnnSgdMomentum) {
  CheckKerasGolden(Arch::kCnn, "nn/keras_cnn_sgd", 0.9f, -0.05f);
}

std::vector<std::vector<float>> Weights(const Sequential& model) {
  std::vector<std::vector<float>> out;
  for (const Variable* v : model.trainable_variables()) out.push_back(Values(*v));
  return out;
}

void CheckRoundTrip(Arch arch) {
  ScratchDir dir;
  std::unique_ptr<Model> a = MakeModel(arch);
  const Tensor x = FixedInput(Batch(*a, 6), 0.0);
  const Tensor y = Labels(6, a->classes);
  for (int i = 0; i < 3; ++i) SLUICE_ASSERT_OK(a->model.TrainStep(x, y).status());
  Checkpoint ca;
  SLUICE_ASSERT_OK(ca.Track("model", &a->model));
  SLUICE_ASSERT_OK(ca.Track("optimizer", a->optimizer.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string path, ca.Save(dir.file("ckpt")));

  std::unique_ptr<Model> b = MakeModel(arch);  // other initial weights
  Checkpoint cb;
  SLUICE_ASSERT_OK(cb.Track("model", &b->model));
  SLUICE_ASSERT_OK(cb.Track("optimizer", b->optimizer.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(RestoreResult r, cb.Restore(path));
  EXPECT_EQ(b->optimizer->iterations(), 3);

  const Tensor probe = FixedInput(Batch(*a, 4), 1.0);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor pa, a->model.Predict(probe));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor pb, b->model.Predict(probe));
  EXPECT_EQ(Floats(pa), Floats(pb));  // bitwise

  SLUICE_ASSERT_OK(a->model.TrainStep(x, y).status());
  SLUICE_ASSERT_OK(b->model.TrainStep(x, y).status());
  SLUICE_EXPECT_OK(r.AssertConsumed());
  EXPECT_EQ(Weights(a->model), Weights(b->model));  // the optimizer state came too
  EXPECT_EQ(b->optimizer->iterations(), 4);
}

// Optimizer::Build makes the slots before any step, so a full restore can
// be asserted (and copied to replicas) before training.
TEST(ModelCheckpointTest, AFullRestoreIsCheckedBeforeTraining) {
  ScratchDir dir;
  std::unique_ptr<Model> a = MakeModel(Arch::kMlp);
  const Tensor x = FixedInput(Batch(*a, 6), 0.0);
  const Tensor y = Labels(6, a->classes);
  for (int i = 0; i < 2; ++i) SLUICE_ASSERT_OK(a->model.TrainStep(x, y).status());
  Checkpoint ca;
  SLUICE_ASSERT_OK(ca.Track("model", &a->model));
  SLUICE_ASSERT_OK(ca.Track("optimizer", a->optimizer.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string path, ca.Save(dir.file("ckpt")));

  std::unique_ptr<Model> b = MakeModel(Arch::kMlp);
  SLUICE_ASSERT_OK(b->model.BuildFor(Batch(*b, 1)));
  Checkpoint cb;
  SLUICE_ASSERT_OK(cb.Track("model", &b->model));
  SLUICE_ASSERT_OK(cb.Track("optimizer", b->optimizer.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(RestoreResult r, cb.Restore(path));
  std::vector<Variable*> vars = b->model.trainable_variables();
  SLUICE_ASSERT_OK(b->optimizer->Build(vars));
  SLUICE_EXPECT_OK(r.AssertConsumed());  // every saved value has its variable now
  const std::vector<Variable*> want = a->optimizer->variables(), got = b->optimizer->variables();
  ASSERT_EQ(want.size(), got.size());
  auto bytes = [](const Variable& v) {
    Tensor t = *v.Read();
    return std::string(static_cast<const char*>(t.raw_data()), t.byte_size());
  };
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(bytes(*want[i]), bytes(*got[i])) << i;
  // A host variable from a plain tensor (a step counter).
  Variable step("step", Tensor::Scalar<int64_t>(7), /*trainable=*/false);
  EXPECT_EQ(step.Read()->scalar<int64_t>(), 7);
  EXPECT_EQ(step.value().device(), Device::Cpu());
}

TEST(ModelCheckpointTest, RoundTripMlpAdam) { CheckRoundTrip(Arch::kMlp); }
TEST(ModelCheckpointTest, RoundTripCnnSgdMomentum) { CheckRoundTrip(Arch::kCnn); }

// For tests/interop/model_interop.sh (skipped unless
// SLUICE_MODEL_INTEROP_DIR is set): trains the MLP and the CNN 3 steps on
// fixed data and saves DIR/<mlp|cnn>/ckpt-1, with DIR/<mlp|cnn>/ours.txt
// (the fixed input, our predictions, iterations) for Keras to compare.
TEST(ModelCheckpointTest, InteropWrite) {
  const char* out = std::getenv("SLUICE_MODEL_INTEROP_DIR");
  if (out == nullptr) GTEST_SKIP() << "SLUICE_MODEL_INTEROP_DIR not set";
  for (auto [arch, name] : {std::pair{Arch::kMlp, "mlp"}, std::pair{Arch::kCnn, "cnn"}}) {
    std::unique_ptr<Model> m = MakeModel(arch);
    const Tensor x = FixedInput(Batch(*m, 6), 0.0);
    for (int i = 0; i < 3; ++i) SLUICE_ASSERT_OK(m->model.TrainStep(x, Labels(6, 3)).status());
    const std::string dir = std::string(out) + "/" + name;
    std::filesystem::create_directories(dir);
    Checkpoint c;
    SLUICE_ASSERT_OK(c.Track("model", &m->model));
    SLUICE_ASSERT_OK(c.Track("optimizer", m->optimizer.get()));
    SLUICE_ASSERT_OK_AND_ASSIGN(std::string path, c.Save(dir + "/ckpt"));
    const Tensor probe = FixedInput(Batch(*m, 3), 1.0);
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor pred, m->model.Predict(probe));
    std::ofstream f(dir + "/ours.txt");
    WriteTensor(f, "input", probe);
    WriteTensor(f, "predictions", pred);
    f << "iterations scalar " << m->optimizer->iterations() << "\n";
    std::cout << "wrote " << path << "\n";
  }
}

// For tests/interop/model_interop.sh: restores the tutorial MLP Keras wrote
// to DIR/tutorial/ckpt-1 and predicts on the Fashion-MNIST images in
// DIR/tutorial/expected.txt, comparing with Keras's predictions there.
TEST(ModelCheckpointTest, InteropTutorialFromKeras) {
  const char* out = std::getenv("SLUICE_MODEL_INTEROP_DIR");
  if (out == nullptr) GTEST_SKIP() << "SLUICE_MODEL_INTEROP_DIR not set";
  const std::string dir = std::string(out) + "/tutorial";
  if (!std::filesystem::exists(dir + "/expected.txt")) GTEST_SKIP() << "no " << dir;
  const std::map<std::string, Named> expected = ReadTensors(dir + "/expected.txt");
  std::unique_ptr<Model> m = MakeModel(Arch::kTutorial);
  Checkpoint c;
  SLUICE_ASSERT_OK(c.Track("model", &m->model));
  SLUICE_ASSERT_OK(c.Track("optimizer", m->optimizer.get()));
  SLUICE_ASSERT_OK_AND_ASSIGN(RestoreResult r, c.Restore(dir + "/ckpt-1"));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor pred, m->model.Predict(FloatTensor(expected.at("input"))));
  SLUICE_EXPECT_OK(r.AssertExistingObjectsMatched());
  const Named& want = expected.at("predictions");
  double max_diff = 0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(pred.flat<float>()[i] - want.values[i]));
  }
  EXPECT_LT(max_diff, 1e-5);
  EXPECT_EQ(m->optimizer->iterations(),
            static_cast<int64_t>(expected.at("iterations").values.at(0)));
  std::cout << "tutorial MLP from Keras: " << pred.shape().dim(0)
            << " images, max |ours - keras| = " << max_diff << "\n";
  std::ofstream f(dir + "/ours.txt");
  WriteTensor(f, "predictions", pred);
}

}  // namespace
}  // namespace sluice::nn
