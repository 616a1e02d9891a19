// Strategies on GPU replicas: NCCL's cross-device ops on one rank (a GPU
// only), and MirroredStrategy over two logical devices of one GPU, which
// NCCL refuses, so they reduce through the host: it must train as one model
// with their combined batch. Without a GPU, gpu:0 and gpu:1 run the GPU
// backend's code on the host, and the host fallback is what runs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/device/config.h"
#include "sluice/device/physical_devices.h"
#include "sluice/distribute/in_process.h"
#include "sluice/nn/cross_device_ops.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/cuda/nccl_ops.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/policy.h"
#include "sluice/nn/sequential.h"
#include "sluice/nn/strategy.h"
#include "test_util.h"

namespace sluice::gpu {
namespace {

class Environment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (GpuAvailability().ok()) {
      // Two logical devices on the first GPU, before the runtime starts.
      ASSERT_TRUE(SetLogicalDeviceConfiguration(
                      0, {{.memory_limit = int64_t{2} << 30}, {.memory_limit = int64_t{2} << 30}})
                      .ok());
      RegisterNnBackend();
    } else {
      RegisterNnBackendOnHost();
    }
    RegisterNcclCrossDeviceOps();
  }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new Environment);

TEST(NcclTest, OneRankAveragesAndBroadcastsOnTheGpu) {
  if (Status s = GpuAvailability(); !s.ok()) GTEST_SKIP() << s;
  if (Status s = NcclAvailability(); !s.ok()) GTEST_SKIP() << s;
  nn::Backend& b = *nn::GetBackend(Device::Gpu(0)).value();
  auto comms = InProcessGroup::Create(1);
  auto ops = nn::MakeCrossDeviceOps(b, *comms[0]);
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_NE((*ops)->name().find("NCCL"), std::string::npos) << (*ops)->name();
  std::vector<float> values(1 << 20);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 0.5f;
  Tensor host = *Tensor::FromVector<float>(values);
  DeviceTensor t = *b.ToDevice(host);
  DeviceTensor* list[] = {&t};
  ASSERT_TRUE((*ops)->AllReduceMean(list).ok());
  ASSERT_TRUE((*ops)->Broadcast(list, 0).ok());
  Tensor back = *b.ToHost(t);
  for (size_t i = 0; i < values.size(); i += 4099) ASSERT_EQ(back.flat<float>()[i], values[i]);
}

std::pair<Tensor, Tensor> Data(int64_t n) {
  Tensor x = *Tensor::Allocate(DType::kFloat32, Shape{n, 6});
  Tensor y = *Tensor::Allocate(DType::kInt64, Shape{n});
  Rng rng(2);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int j = 0; j < 6; ++j) {
      const float v = rng.Uniform(-1, 1);
      x.flat<float>()[i * 6 + j] = v;
      s += v * static_cast<float>(j - 2);
    }
    y.flat<int64_t>()[i] = s > 0 ? 1 : 0;
  }
  return {x, y};
}

std::unique_ptr<nn::Sequential> Model(std::shared_ptr<nn::Strategy> strategy) {
  auto m = std::make_unique<nn::Sequential>();
  m->Add<nn::Dense>(8, nn::DenseOptions{.activation = nn::Activation::kRelu});
  m->Add<nn::Dense>(2);
  EXPECT_TRUE(m->SetDevice(Device::Gpu(0)).ok());
  EXPECT_TRUE(m->Compile({.optimizer = std::make_shared<nn::SGD>(0.1f, 0.9f),
                          .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                          .strategy = std::move(strategy)})
                  .ok());
  return m;
}

TEST(NcclTest, MirroredOverTwoLogicalDevicesOfOneGpuTrainsAsOneModel) {
  auto [x, y] = Data(128);
  nn::SetRandomSeed(5);
  auto one = Model(nullptr);
  ASSERT_TRUE(
      one->Fit(Dataset::from_tensor_slices({x, y}).batch(16), {.epochs = 2, .verbose = 0}).ok());
  nn::SetRandomSeed(5);
  auto strategy = nn::MirroredStrategy::Create({.devices = {"gpu:0", "gpu:1"}});
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  auto model = Model(*strategy);
  auto train = (*strategy)->DistributeDatasets([&](const InputContext& c) {
    return Dataset::from_tensor_slices({x, y}).apply(distribute(c)).batch(8);
  });
  auto h = model->Fit(train, {.epochs = 2, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  auto a = one->trainable_variables(), b = model->trainable_variables();
  ASSERT_EQ(a.size(), b.size());
  for (size_t v = 0; v < a.size(); ++v) {
    Tensor ta = *a[v]->Read(), tb = *b[v]->Read();
    for (int64_t i = 0; i < ta.num_elements(); ++i) {
      EXPECT_NEAR(ta.flat<float>()[i], tb.flat<float>()[i], 1e-5f) << a[v]->name() << " " << i;
    }
  }
}

// FitOptions::capture under the strategy: each replica records its step in
// two pieces around the (eager) all-reduce; the weights are those of the
// eager run, in float32 and under mixed_bfloat16. 120 rows in per-replica
// batches of 8 leave a last batch of 4 per replica each epoch, which trains
// eagerly between replays.
class MirroredCapture : public ::testing::TestWithParam<bool> {};  // mixed_bfloat16

TEST_P(MirroredCapture, CapturedStepsTrainAsTheEagerOnes) {
  if (GetParam()) nn::SetGlobalPolicy(nn::DTypePolicy::MixedBFloat16());
  struct Restore {
    ~Restore() { nn::SetGlobalPolicy(nn::DTypePolicy::Float32()); }
  } restore;
  auto [x, y] = Data(120);
  std::vector<std::vector<float>> weights[2];
  for (bool capture : {false, true}) {
    nn::SetRandomSeed(7);
    auto strategy = nn::MirroredStrategy::Create({.devices = {"gpu:0", "gpu:1"}});
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    auto model = Model(*strategy);
    auto train = (*strategy)->DistributeDatasets([&](const InputContext& c) {
      return Dataset::from_tensor_slices({x, y}).apply(distribute(c)).batch(8);
    });
    auto h = model->Fit(train, {.epochs = 2, .verbose = 0, .capture = capture});
    ASSERT_TRUE(h.ok()) << h.status();
    for (nn::Variable* v : model->trainable_variables()) {
      Tensor t = *v->Read();
      weights[capture].emplace_back(t.flat<float>().begin(), t.flat<float>().end());
    }
  }
  ASSERT_EQ(weights[0].size(), weights[1].size());
  for (size_t v = 0; v < weights[0].size(); ++v) {
    ASSERT_EQ(weights[0][v].size(), weights[1][v].size());
    for (size_t i = 0; i < weights[0][v].size(); ++i) {
      EXPECT_NEAR(weights[0][v][i], weights[1][v][i], 1e-6f) << "variable " << v << " " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, MirroredCapture, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "MixedBFloat16" : "Float32"; });

TEST(NcclTest, CapturedStepsUnderACpuStrategyAreRefused) {
  auto [x, y] = Data(32);
  auto strategy = nn::MirroredStrategy::Create({.devices = {"cpu:0"}});
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  auto model = std::make_unique<nn::Sequential>();
  model->Add<nn::Dense>(2);
  ASSERT_TRUE(model
                  ->Compile({.optimizer = std::make_shared<nn::SGD>(0.1f),
                             .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                             .strategy = *strategy})
                  .ok());
  auto train = (*strategy)->DistributeDatasets([&](const InputContext& c) {
    return Dataset::from_tensor_slices({x, y}).apply(distribute(c)).batch(8);
  });
  auto h = model->Fit(train, {.epochs = 1, .verbose = 0, .capture = true});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument) << h.status();
  EXPECT_NE(h.status().message().find("cannot"), std::string_view::npos) << h.status();
}

}  // namespace
}  // namespace sluice::gpu
