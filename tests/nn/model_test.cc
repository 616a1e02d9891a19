// Sequential end to end on the CPU backend: learning, determinism, the
// custom-loop API, optimizer formulas, summaries and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "sluice/core/rng.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"
#include "sluice/records/summary_writer.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

// n points in 8-D; the label is the argmax of a fixed linear map, so a
// linear model can learn it exactly and an MLP learns it quickly.
Dataset Blobs(int64_t n, uint64_t seed) {
  Tensor x = *Tensor::Allocate(DType::kFloat32, Shape{n, 8});
  Tensor y = *Tensor::Allocate(DType::kInt64, Shape{n});
  Rng rng(seed);
  Rng map_rng(99);
  float w[8][3];
  for (auto& row : w) {
    for (float& v : row) v = map_rng.Uniform(-1, 1);
  }
  for (int64_t i = 0; i < n; ++i) {
    float* xi = x.flat<float>().data() + i * 8;
    for (int j = 0; j < 8; ++j) xi[j] = rng.Uniform(-1, 1);
    int best = 0;
    float best_v = -1e9f;
    for (int c = 0; c < 3; ++c) {
      float s = 0;
      for (int j = 0; j < 8; ++j) s += xi[j] * w[j][c];
      if (s > best_v) best_v = s, best = c;
    }
    y.flat<int64_t>()[i] = best;
  }
  return Dataset::from_tensor_slices({x, y});
}

std::unique_ptr<Sequential> Mlp(std::shared_ptr<Optimizer> opt) {
  auto model = std::make_unique<Sequential>();
  model->Add<Dense>(32, DenseOptions{.activation = Activation::kRelu});
  model->Add<Dense>(3);
  EXPECT_TRUE(model
                  ->Compile({.optimizer = std::move(opt),
                             .loss = std::make_shared<SparseCategoricalCrossentropy>(true),
                             .metrics = {std::make_shared<SparseCategoricalAccuracy>()}})
                  .ok());
  return model;
}

TEST(ModelTest, MlpLearnsAndReportsHistory) {
  SetRandomSeed(1);
  auto model = Mlp(std::make_shared<Adam>(0.01f));
  Dataset train = Blobs(2048, 1).shuffle(2048, {.seed = 3}).batch(32);
  Dataset test = Blobs(512, 2).batch(64);
  Result<History> h = model->Fit(train, {.epochs = 6, .validation_data = test, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(h->history["loss"].size(), 6u);
  EXPECT_LT(h->history["loss"].back(), h->history["loss"].front());
  EXPECT_GT(h->history["val_accuracy"].back(), 0.9);
  EXPECT_EQ(h->steps, 6 * 64);
  EXPECT_GT(h->examples_per_second, 0);
  EXPECT_GE(h->input_wait_fraction, 0);
  EXPECT_LT(h->input_wait_fraction, 1);
  auto eval = model->Evaluate(test);
  ASSERT_TRUE(eval.ok());
  EXPECT_NEAR((*eval)["accuracy"], h->history["val_accuracy"].back(), 1e-9);
  Result<Tensor> pred = model->Predict(test);
  ASSERT_TRUE(pred.ok()) << pred.status().ToString();
  EXPECT_EQ(pred->shape(), (Shape{512, 3}));
  EXPECT_EQ(model->optimizer()->iterations(), 6 * 64);
}

TEST(ModelTest, SameSeedSameWeights) {
  std::vector<std::vector<float>> runs;
  for (int r = 0; r < 2; ++r) {
    SetRandomSeed(42);
    auto model = Mlp(std::make_shared<SGD>(0.1f, 0.9f, true));
    model->Add<Dropout>(0.0f);
    ASSERT_TRUE(model->Fit(Blobs(256, 5).batch(32), {.epochs = 2, .verbose = 0}).ok());
    std::vector<float> all;
    for (Variable* v : model->trainable_variables()) {
      Tensor t = *v->Read();
      all.insert(all.end(), t.flat<float>().begin(), t.flat<float>().end());
    }
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(ModelTest, CustomLoopEqualsTrainStep) {
  Dataset data = Blobs(64, 9).batch(64);
  Element batch = **(*data.iterator()).next();
  std::vector<std::vector<float>> runs;
  for (int r = 0; r < 2; ++r) {
    SetRandomSeed(5);
    auto model = Mlp(std::make_shared<Adam>());
    if (r == 0) {
      ASSERT_TRUE(model->TrainStep(batch[0], batch[1]).ok());
    } else {
      auto g = model->ComputeGradients(batch[0], batch[1]);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      ASSERT_EQ(g->grads.size(), 4u);
      ASSERT_TRUE(model->optimizer()
                      ->ApplyGradients(std::span<DeviceTensor* const>(g->grads),
                                       std::span<Variable* const>(g->variables))
                      .ok());
    }
    std::vector<float> all;
    for (Variable* v : model->trainable_variables()) {
      Tensor t = *v->Read();
      all.insert(all.end(), t.flat<float>().begin(), t.flat<float>().end());
    }
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

Variable MakeVar(float value) {
  return Variable("w",
                  *(*GetBackend(Device::Cpu()))->ToDevice(*Tensor::FromVector<float>({value})));
}

TEST(OptimizerTest, SgdMomentumAndNesterovFollowKeras) {
  // Keras: v = m·v - lr·g; w += v (nesterov: w += m·v - lr·g).
  for (bool nesterov : {false, true}) {
    Variable w = MakeVar(1.0f);
    SGD sgd(0.1f, 0.9f, nesterov);
    Variable* vars[] = {&w};
    double v = 0, expect = 1.0;
    for (int step = 0; step < 3; ++step) {
      DeviceTensor g = *(*GetBackend(Device::Cpu()))->ToDevice(*Tensor::FromVector<float>({0.5f}));
      ASSERT_TRUE(sgd.ApplyGradients(std::span<const DeviceTensor>(&g, 1), vars).ok());
      v = 0.9 * v - 0.1 * 0.5;
      expect += nesterov ? 0.9 * v - 0.1 * 0.5 : v;
    }
    EXPECT_NEAR(w.value().data<float>()[0], expect, 1e-6);
    EXPECT_EQ(sgd.iterations(), 3);
  }
}

TEST(OptimizerTest, AdamFollowsKeras) {
  Variable w = MakeVar(1.0f);
  Adam adam(0.1f);
  Variable* vars[] = {&w};
  double m = 0, v = 0, expect = 1.0;
  for (int t = 1; t <= 3; ++t) {
    double g = 0.2 * t;
    DeviceTensor gd = *(*GetBackend(Device::Cpu()))
                           ->ToDevice(*Tensor::FromVector<float>({static_cast<float>(g)}));
    ASSERT_TRUE(adam.ApplyGradients(std::span<const DeviceTensor>(&gd, 1), vars).ok());
    m += (g - m) * 0.1;
    v += (g * g - v) * 0.001;
    double alpha = 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    expect -= alpha * m / (std::sqrt(v) + 1e-7);
  }
  EXPECT_NEAR(w.value().data<float>()[0], expect, 1e-5);
}

TEST(OptimizerTest, RejectsMismatchedGradients) {
  Variable w = MakeVar(1.0f);
  SGD sgd;
  Variable* vars[] = {&w};
  DeviceTensor g = *(*GetBackend(Device::Cpu()))->ToDevice(*Tensor::FromVector<float>({1, 2}));
  Status s = sgd.ApplyGradients(std::span<const DeviceTensor>(&g, 1), vars);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("w"), std::string::npos) << s.ToString();
}

TEST(ModelTest, SummaryListsLayersAndParams) {
  Sequential model;
  model.Add<Flatten>();
  model.Add<Dense>(128, DenseOptions{.activation = Activation::kRelu});
  model.Add<Dense>(10);
  ASSERT_TRUE(model.BuildFor(Shape{1, 28, 28}).ok());
  ASSERT_TRUE(model.Predict(*Tensor::Zeros(DType::kFloat32, Shape{2, 28, 28})).ok());
  std::string s = model.Summary();
  EXPECT_NE(s.find("dense_1"), std::string::npos) << s;
  EXPECT_NE(s.find("[None,128]"), std::string::npos) << s;
  EXPECT_NE(s.find("Total params: 101770"), std::string::npos) << s;
}

TEST(ModelTest, CnnOnUint8ImagesWithRescaling) {
  SetRandomSeed(3);
  Sequential model;
  model.Add<Rescaling>(1.0f / 255);
  model.Add<Conv2D>(4, 3, Conv2DOptions{.activation = Activation::kRelu});
  model.Add<MaxPooling2D>();
  model.Add<Flatten>();
  model.Add<Dense>(2, DenseOptions{.activation = Activation::kSoftmax});
  ASSERT_TRUE(model
                  .Compile({.optimizer = std::make_shared<Adam>(0.01f),
                            .loss = std::make_shared<SparseCategoricalCrossentropy>(),
                            .metrics = {std::make_shared<SparseCategoricalAccuracy>()}})
                  .ok());
  // Bright vs dark 8x8 images.
  Tensor x = *Tensor::Allocate(DType::kUInt8, Shape{64, 8, 8, 1});
  Tensor y = *Tensor::Allocate(DType::kInt32, Shape{64});
  Rng rng(4);
  for (int i = 0; i < 64; ++i) {
    y.flat<int32_t>()[i] = i % 2;
    for (int p = 0; p < 64; ++p) {
      x.flat<uint8_t>()[i * 64 + p] = static_cast<uint8_t>((i % 2 ? 150 : 0) + rng.UniformInt(100));
    }
  }
  Result<History> h =
      model.Fit(Dataset::from_tensor_slices({x, y}).batch(16), {.epochs = 15, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->history["accuracy"].back(), 1.0);
}

TEST(ModelTest, FitPrintsLinesAndLogsToTensorBoard) {
  testing::ScratchDir dir;
  auto model = Mlp(std::make_shared<Adam>());
  auto writer = SummaryWriter::Create(dir.path());
  ASSERT_TRUE(writer.ok());
  FILE* out = std::tmpfile();
  Result<History> h = model->Fit(
      Blobs(256, 1).batch(32),
      {.epochs = 2, .verbose = 2, .out = out, .summary_writer = &*writer, .log_every_steps = 4});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(writer->Close().ok());
  std::rewind(out);
  char buf[4096] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, out);
  std::fclose(out);
  std::string text(buf, n);
  EXPECT_NE(text.find("Epoch 1/2 - 8 steps"), std::string::npos) << text;
  EXPECT_NE(text.find("Epoch 2/2"), std::string::npos) << text;
  EXPECT_NE(text.find("accuracy: "), std::string::npos) << text;
  std::string events;
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    events += testing::ReadFileOrDie(f.path().string());
  }
  for (const char* tag : {"batch_loss", "epoch_accuracy", "examples_per_second",
                          "input_wait_fraction", "pipeline/"}) {
    EXPECT_NE(events.find(tag), std::string::npos) << tag;
  }
}

TEST(ModelTest, ErrorsAreClear) {
  Sequential uncompiled;
  uncompiled.Add<Dense>(2);
  EXPECT_EQ(uncompiled.Fit(Blobs(8, 1).batch(4)).status().code(), StatusCode::kFailedPrecondition);
  auto model = Mlp(std::make_shared<SGD>());
  Result<History> one = model->Fit(Dataset::range(8).batch(4), {.verbose = 0});
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("(x, y)"), std::string::npos) << one.status().ToString();
  EXPECT_NE(one.status().message().find("epoch 1 step 1"), std::string::npos);
  FitOptions negative{.verbose = 0};
  negative.prefetch_to_device = -1;
  Result<History> neg = model->Fit(Blobs(8, 1).batch(4), negative);
  EXPECT_EQ(neg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(neg.status().message().find("prefetch_to_device must be >= 0, got -1"),
            std::string::npos)
      << neg.status();
  // On the CPU batches are read in place: on_batch_end may save the iterator.
  int64_t with_iterator = 0;
  FitOptions watch{.verbose = 0};
  watch.on_batch_end = [&](const StepInfo& info) {
    with_iterator += info.iterator != nullptr;
    return Status::OK();
  };
  ASSERT_TRUE(model->Fit(Blobs(8, 1).batch(4), watch).ok());
  EXPECT_EQ(with_iterator, 2);
  // 8 features expected by the built model, 5 given.
  ASSERT_TRUE(model->Fit(Blobs(8, 1).batch(4), {.verbose = 0}).ok());
  Result<Tensor> bad = model->Predict(*Tensor::Zeros(DType::kFloat32, Shape{2, 5}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2,5]"), std::string::npos) << bad.status().ToString();
}

// TrainStep on tensors already on the model's device is the host-tensor
// step without the copies; a tensor of another device is rejected by name.
TEST(ModelTest, TrainStepOnDeviceTensors) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Backend * cpu, GetBackend(Device::Cpu()));
  std::vector<Element> batches;
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, Blobs(64, 5).batch(32).iterator());
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> batch, it.next());
    if (!batch) break;
    batches.push_back(*batch);
  }
  // Layers draw their weights when built (the first step): seed right before.
  auto a = Mlp(std::make_shared<Adam>(0.01f));
  auto b = Mlp(std::make_shared<Adam>(0.01f));
  std::vector<double> la, lb;
  SetRandomSeed(4);
  for (const Element& e : batches) la.push_back(a->TrainStep(e[0], e[1]).value());
  SetRandomSeed(4);
  for (const Element& e : batches) {
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor x, cpu->ToDevice(e[0]));
    SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor y, cpu->ToDevice(e[1]));
    lb.push_back(b->TrainStep(x, y).value());
  }
  EXPECT_EQ(la, lb);
  std::vector<Variable*> va = a->trainable_variables(), vb = b->trainable_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor ta, va[i]->Read());
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor tb, vb[i]->Read());
    EXPECT_EQ(std::vector<float>(ta.flat<float>().begin(), ta.flat<float>().end()),
              std::vector<float>(tb.flat<float>().begin(), tb.flat<float>().end()));
  }
  const DeviceTensor elsewhere(Device::Gpu(0), *Tensor::Zeros(DType::kFloat32, Shape{2, 8}));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor y,
                              cpu->ToDevice(*Tensor::Zeros(DType::kInt64, Shape{2})));
  Result<double> r = a->TrainStep(elsewhere, y);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("x is on gpu:0"), std::string::npos) << r.status();
}

TEST(ModelTest, ALayerBuiltOnAnotherDeviceCannotJoin) {
  auto dense = std::make_unique<Dense>(2);
  SLUICE_ASSERT_OK_AND_ASSIGN(Backend * cpu, GetBackend(Device::Cpu()));
  SLUICE_ASSERT_OK_AND_ASSIGN(DeviceTensor x,
                              cpu->ToDevice(*Tensor::Zeros(DType::kFloat32, Shape{1, 3})));
  SLUICE_ASSERT_OK(dense->Forward(x, false).status());  // built on the CPU
  Sequential model;
  SLUICE_ASSERT_OK(model.SetDevice(Device::Gpu(0)));  // nothing built yet
  model.Add(std::move(dense));
  Status s = model.Compile(
      {.optimizer = std::make_shared<SGD>(), .loss = std::make_shared<MeanSquaredError>()});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("dense"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("built on"), std::string::npos) << s.ToString();
  EXPECT_FALSE(model.Predict(*Tensor::Zeros(DType::kFloat32, Shape{1, 3})).ok());
}

}  // namespace
}  // namespace sluice::nn
