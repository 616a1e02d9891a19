// MirroredStrategy with CPU replicas in one process: W replicas of batch b
// train to the weights of one model with batch W*b, the replicas stay equal
// bit for bit, metrics are over all replicas, a checkpoint restores on any
// number of replicas, and failures are errors naming the replica.
#include "sluice/nn/strategy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "sluice/core/rng.h"
#include "sluice/nn/checkpoint.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/policy.h"
#include "sluice/nn/sequential.h"
#include "sluice/records/summary_writer.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

// n points in 8-D labelled by the argmax of a fixed linear map.
std::pair<Tensor, Tensor> Blobs(int64_t n, uint64_t seed) {
  Tensor x = *Tensor::Allocate(DType::kFloat32, Shape{n, 8});
  Tensor y = *Tensor::Allocate(DType::kInt64, Shape{n});
  Rng rng(seed), map_rng(99);
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
  return {x, y};
}

std::unique_ptr<Sequential> Mlp(std::shared_ptr<Optimizer> opt,
                                std::shared_ptr<Strategy> strategy = nullptr) {
  auto model = std::make_unique<Sequential>();
  model->Add<Dense>(16, DenseOptions{.activation = Activation::kRelu});
  model->Add<Dense>(3);
  Status s = model->Compile({.optimizer = std::move(opt),
                             .loss = std::make_shared<SparseCategoricalCrossentropy>(true),
                             .metrics = {std::make_shared<SparseCategoricalAccuracy>()},
                             .strategy = std::move(strategy)});
  EXPECT_TRUE(s.ok()) << s;
  return model;
}

std::vector<float> Weights(Sequential& m) {
  std::vector<float> all;
  for (Variable* v : m.trainable_variables()) {
    Tensor t = *v->Read();
    all.insert(all.end(), t.flat<float>().begin(), t.flat<float>().end());
  }
  return all;
}

std::shared_ptr<MirroredStrategy> CpuReplicas(int n) {
  MirroredOptions o;
  for (int i = 0; i < n; ++i) o.devices.push_back("cpu:" + std::to_string(i));
  auto s = MirroredStrategy::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

TEST(StrategyTest, ReplicasOfBatchBTrainAsOneModelOfBatchWB) {
  auto [x, y] = Blobs(192, 1);
  for (int w : {2, 3}) {
    SCOPED_TRACE(std::to_string(w) + " replicas");
    const int64_t b = 8;
    // One model, global batches of w * b, in order.
    SetRandomSeed(7);
    auto one = Mlp(std::make_shared<SGD>(0.1f, 0.9f));
    ASSERT_TRUE(
        one->Fit(Dataset::from_tensor_slices({x, y}).batch(w * b), {.epochs = 2, .verbose = 0})
            .ok());
    // w replicas, each b of the same global batch: positions r, r + w, ...
    SetRandomSeed(7);
    auto strategy = CpuReplicas(w);
    auto model = Mlp(std::make_shared<SGD>(0.1f, 0.9f), strategy);
    DistributedDataset train = strategy->DistributeDatasets([&](const InputContext& ctx) {
      return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(b);
    });
    Result<History> h = model->Fit(train, {.epochs = 2, .verbose = 0});
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->steps, 2 * (192 / (w * b)));
    EXPECT_EQ(model->optimizer()->iterations(), one->optimizer()->iterations());
    const std::vector<float> a = Weights(*one), c = Weights(*model);
    ASSERT_EQ(a.size(), c.size());
    // The same sums in another order: float32 rounding, nothing more.
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], c[i], 1e-5f) << "weight " << i;
    // The replicas are equal to the last bit.
    for (int r = 1; r < w; ++r) {
      const std::vector<float> other = Weights(*model->replica(static_cast<size_t>(r)));
      ASSERT_EQ(std::memcmp(other.data(), c.data(), c.size() * sizeof(float)), 0) << r;
    }
  }
}

TEST(StrategyTest, AdamReplicasStayBitEqualAndMetricsCoverEveryReplica) {
  auto [x, y] = Blobs(256, 2);
  SetRandomSeed(3);
  auto strategy = CpuReplicas(2);
  auto model = Mlp(std::make_shared<Adam>(0.01f), strategy);
  DistributedDataset train = strategy->DistributeDatasets([&](const InputContext& ctx) {
    return Dataset::from_tensor_slices({x, y})
        .global_shuffle({.seed = 1})
        .apply(distribute(ctx))
        .batch(16);
  });
  Result<History> h = model->Fit(train, {.epochs = 5, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_LT(h->history["loss"].back(), h->history["loss"].front());
  const std::vector<float> a = Weights(*model), b = Weights(*model->replica(1));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  // Evaluation over both replicas, padded to equal steps with weight-0
  // copies, equals one model evaluating every element once.
  auto [tx, ty] = Blobs(101, 9);
  DistributedDataset test = strategy->DistributeDatasets([&](const InputContext& ctx) {
    return Dataset::from_tensor_slices({tx, ty}, {"x", "y"})
        .apply(distribute(ctx, {.pad_for_eval = true}))
        .batch(10);
  });
  FitOptions names{.verbose = 0};
  names.x_name = "x";
  names.y_name = "y";
  auto distributed = model->Evaluate(test, names);
  ASSERT_TRUE(distributed.ok()) << distributed.status();
  auto alone = model->Evaluate(Dataset::from_tensor_slices({tx, ty}).batch(10), {.verbose = 0});
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_NEAR((*distributed)["accuracy"], (*alone)["accuracy"], 1e-12);
  EXPECT_NEAR((*distributed)["loss"], (*alone)["loss"], 1e-6);
  EXPECT_NEAR(h->history["accuracy"].back(),
              (*model->Evaluate(Dataset::from_tensor_slices({x, y}).batch(32))).at("accuracy"),
              0.2);
}

// mixed_bfloat16 under a strategy: the replicas compute in bfloat16, keep
// float32 weights, stay equal to the last bit, and train as one model of
// the global batch does (measured: 1.5e-8 apart after 24 steps).
TEST(StrategyTest, MixedPrecisionReplicasStayBitEqualAndTrackOneModel) {
  SetGlobalPolicy(DTypePolicy::MixedBFloat16());
  struct Restore {
    ~Restore() { SetGlobalPolicy(DTypePolicy::Float32()); }
  } restore;
  auto [x, y] = Blobs(192, 4);
  SetRandomSeed(11);
  auto one = Mlp(std::make_shared<SGD>(0.1f));
  ASSERT_TRUE(
      one->Fit(Dataset::from_tensor_slices({x, y}).batch(16), {.epochs = 2, .verbose = 0}).ok());
  SetRandomSeed(11);
  auto strategy = CpuReplicas(2);
  auto model = Mlp(std::make_shared<SGD>(0.1f), strategy);
  EXPECT_EQ(model->layers()[0]->dtype_policy(), DTypePolicy::MixedBFloat16());
  DistributedDataset train = strategy->DistributeDatasets([&](const InputContext& ctx) {
    return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(8);
  });
  Result<History> h = model->Fit(train, {.epochs = 2, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  const std::vector<float> a = Weights(*one), c = Weights(*model), r1 = Weights(*model->replica(1));
  ASSERT_EQ(std::memcmp(r1.data(), c.data(), c.size() * sizeof(float)), 0);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double{a[i]} - c[i]));
  EXPECT_LT(worst, 1e-4) << "largest weight difference to one model of the global batch";
  EXPECT_LT(h->history["loss"].back(), h->history["loss"].front());
}

TEST(StrategyTest, ACheckpointRestoresOnAnyNumberOfReplicas) {
  testing::ScratchDir dir;
  auto [x, y] = Blobs(128, 4);
  SetRandomSeed(11);
  auto two = CpuReplicas(2);
  auto model = Mlp(std::make_shared<Adam>(0.01f), two);
  ASSERT_TRUE(model
                  ->Fit(two->DistributeDatasets([&](const InputContext& ctx) {
                    return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(8);
                  }),
                        {.epochs = 1, .verbose = 0})
                  .ok());
  Checkpoint ckpt;
  ASSERT_TRUE(ckpt.Track("model", model.get()).ok());
  auto path = ckpt.Save(dir.file("ckpt"));
  ASSERT_TRUE(path.ok()) << path.status();
  const auto want = *model->Evaluate(Dataset::from_tensor_slices({x, y}).batch(32));
  // Three replicas restore it and continue from the same weights and
  // optimizer state (broadcast from replica 0 when Fit begins).
  SetRandomSeed(99);
  auto three = CpuReplicas(3);
  auto restored = Mlp(std::make_shared<Adam>(0.01f), three);
  Checkpoint back;
  ASSERT_TRUE(back.Track("model", restored.get()).ok());
  ASSERT_TRUE(back.Restore(*path).ok());
  const auto got = *restored->Evaluate(Dataset::from_tensor_slices({x, y}).batch(32));
  EXPECT_NEAR(got.at("loss"), want.at("loss"), 1e-6);
  ASSERT_TRUE(restored
                  ->Fit(three->DistributeDatasets([&](const InputContext& ctx) {
                    return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(8);
                  }),
                        {.epochs = 1, .verbose = 0})
                  .ok());
  // 128 / 3 = 42 elements per replica: 6 batches of 8 (the last of 2).
  EXPECT_EQ(restored->optimizer()->iterations(), model->optimizer()->iterations() + 6);
  const std::vector<float> a = Weights(*restored), b = Weights(*restored->replica(2));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(StrategyTest, AReplicaThatFailsIsNamedAndNobodyHangs) {
  auto [x, y] = Blobs(64, 5);
  SetRandomSeed(1);
  auto strategy = CpuReplicas(2);
  auto model = Mlp(std::make_shared<SGD>(0.1f), strategy);
  DistributedDataset train = strategy->DistributeDatasets([&](const InputContext& ctx) {
    Dataset ds = Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(4);
    if (ctx.rank != 1) return ds;
    return ds.enumerate().map([](Element e) -> Result<Element> {
      if (e[0].scalar<int64_t>() == 3) return Status::DataLoss("shard 7: bad record");
      return Element({e[1], e[2]});
    });
  });
  const auto start = std::chrono::steady_clock::now();
  Result<History> h = model->Fit(train, {.epochs = 1, .verbose = 0});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  SLUICE_EXPECT_ERROR(h.status(), StatusCode::kDataLoss, "fit: replica 1: epoch 1 step 4");
  SLUICE_EXPECT_ERROR(h.status(), StatusCode::kDataLoss, "shard 7: bad record");
}

// The all-reduce overlapped with the backward pass (buckets of the last
// layers reduced on the ops' thread while earlier layers' gradients are
// computed) trains to the same weights, bit for bit, as the all-reduce
// after the backward pass, with buckets small enough that several are in
// flight and pieces that cross tensors.
TEST(StrategyTest, OverlappedAllReduceGivesTheSameWeightsBitForBit) {
  auto [x, y] = Blobs(192, 4);
  std::vector<std::vector<float>> weights;
  for (bool overlap : {false, true}) {
    SetRandomSeed(5);
    MirroredOptions o{.devices = {"cpu:0", "cpu:1", "cpu:2"}};
    o.cross_device = {
        .bucket_bytes = 300, .first_bucket_bytes = 100, .chunk_bytes = 40, .overlap = overlap};
    auto strategy = MirroredStrategy::Create(o);
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    auto model = std::make_unique<Sequential>();
    model->Add<Dense>(16, DenseOptions{.activation = Activation::kRelu});
    model->Add<Dense>(12, DenseOptions{.activation = Activation::kRelu});
    model->Add<Dense>(3);
    ASSERT_TRUE(model
                    ->Compile({.optimizer = std::make_shared<Adam>(0.01f),
                               .loss = std::make_shared<SparseCategoricalCrossentropy>(true),
                               .strategy = *strategy})
                    .ok());
    DistributedDataset train = (*strategy)->DistributeDatasets([&](const InputContext& ctx) {
      return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(8);
    });
    Result<History> h = model->Fit(train, {.epochs = 2, .verbose = 0});
    ASSERT_TRUE(h.ok()) << h.status();
    weights.push_back(Weights(*model));
    // The gradients lie in one buffer, last layer first, where the backward
    // pass wrote them: every bucket is reduced in place.
    for (size_t r = 0; r < 3; ++r) {
      std::vector<DeviceTensor*> grads;
      for (size_t i = model->layers().size(); i-- > 0;) {
        for (DeviceTensor* g : model->replica(r)->layers()[i]->gradients()) grads.push_back(g);
      }
      ASSERT_EQ(grads.size(), 6u);
      for (size_t k = 1; k < grads.size(); ++k) {
        EXPECT_EQ(static_cast<const uint8_t*>(grads[k - 1]->raw_data()) + grads[k - 1]->byte_size(),
                  grads[k]->raw_data())
            << "replica " << r << " gradient " << k;
      }
    }
    for (size_t r = 1; r < 3; ++r) {
      const std::vector<float> other = Weights(*model->replica(r));
      ASSERT_EQ(std::memcmp(other.data(), weights.back().data(), other.size() * sizeof(float)), 0);
    }
  }
  ASSERT_EQ(weights[0].size(), weights[1].size());
  EXPECT_EQ(std::memcmp(weights[0].data(), weights[1].data(), weights[0].size() * sizeof(float)),
            0);
}

// Passes x on; its backward pass fails on cpu:1 at its third call, after
// the later layers' buckets went to the overlapped all-reduce.
class FailsOnCpu1 : public Layer {
 public:
  FailsOnCpu1() : Layer("fails_on_cpu1") {}
  Result<DeviceTensor> Call(const DeviceTensor& x, bool) override { return x; }
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override {
    if (device() == Device::Cpu(1) && ++calls_ == 3) {
      return Status::DataLoss("backward pass broke on cpu:1");
    }
    return dy;
  }

 protected:
  std::unique_ptr<Layer> CloneLayer() const override { return std::make_unique<FailsOnCpu1>(); }

 private:
  int calls_ = 0;
};

TEST(StrategyTest, AReplicaThatFailsDuringAnOverlappedAllReduceIsNamed) {
  auto [x, y] = Blobs(64, 5);
  SetRandomSeed(1);
  MirroredOptions o{.devices = {"cpu:0", "cpu:1"}};
  o.cross_device = {.bucket_bytes = 64, .overlap = true};
  auto strategy = MirroredStrategy::Create(o);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  Sequential model;
  model.Add<Dense>(8);
  model.Add<FailsOnCpu1>();
  model.Add<Dense>(16, DenseOptions{.activation = Activation::kRelu});
  model.Add<Dense>(3);
  ASSERT_TRUE(model
                  .Compile({.optimizer = std::make_shared<SGD>(0.1f),
                            .loss = std::make_shared<SparseCategoricalCrossentropy>(true),
                            .strategy = *strategy})
                  .ok());
  DistributedDataset train = (*strategy)->DistributeDatasets([&](const InputContext& ctx) {
    return Dataset::from_tensor_slices({x, y}).apply(distribute(ctx)).batch(4);
  });
  const auto start = std::chrono::steady_clock::now();
  Result<History> h = model.Fit(train, {.epochs = 1, .verbose = 0});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  SLUICE_EXPECT_ERROR(h.status(), StatusCode::kDataLoss, "fit: replica 1: epoch 1 step 3");
  SLUICE_EXPECT_ERROR(h.status(), StatusCode::kDataLoss, "backward pass broke on cpu:1");
}

TEST(StrategyTest, AReplicaThatRunsDryEndsTheEpochForAll) {
  auto [x, y] = Blobs(64, 6);
  SetRandomSeed(1);
  auto strategy = CpuReplicas(2);
  auto model = Mlp(std::make_shared<SGD>(0.1f), strategy);
  // Replica 1 has 3 batches, replica 0 has 8: without the agreement on every
  // step, replica 0 would wait for replica 1 in an all-reduce forever.
  DistributedDataset train = strategy->DistributeDatasets([&](const InputContext& ctx) {
    return Dataset::from_tensor_slices({x, y}).batch(4).take(ctx.rank == 1 ? 3 : 8);
  });
  Result<History> h = model->Fit(train, {.epochs = 2, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->steps, 6);
}

// Fit on one device and under a strategy are one loop: the same step logs,
// validation_data, History keys, callback error context. (Before the loops
// were one, Fit under a strategy logged neither examples/s, input wait nor
// pipeline stats, ignored validation_data, and named no step in a
// callback's error.)
TEST(StrategyTest, FitUnderAStrategyLogsValidatesAndFailsAsOnOneDevice) {
  auto [x, y] = Blobs(64, 8);
  auto [vx, vy] = Blobs(32, 9);
  const Dataset validation = Dataset::from_tensor_slices({vx, vy}).batch(8);
  auto strategy = CpuReplicas(2);
  std::map<std::string, std::vector<double>> keys[2];
  for (int distributed = 0; distributed < 2; ++distributed) {
    SCOPED_TRACE(distributed ? "strategy" : "one device");
    SetRandomSeed(1);
    auto model = Mlp(std::make_shared<Adam>(), distributed ? strategy : nullptr);
    testing::ScratchDir dir;
    auto writer = SummaryWriter::Create(dir.path());
    ASSERT_TRUE(writer.ok()) << writer.status();
    int64_t calls = 0;
    FitOptions o{.epochs = 2,
                 .validation_data = validation,
                 .verbose = 2,
                 .out = std::tmpfile(),
                 .summary_writer = &*writer,
                 .log_every_steps = 2};
    o.on_batch_end = [&](const StepInfo& info) {
      ++calls;
      EXPECT_NE(info.iterator, nullptr);                // read in place on the CPU
      EXPECT_EQ(info.batch_size, distributed ? 4 : 8);  // its own replica's rows
      return Status::OK();
    };
    Result<History> h =
        distributed ? model->Fit(strategy->DistributeDatasets([&](const InputContext& ctx) {
          return Dataset::from_tensor_slices({x, y}).shard(ctx.world_size, ctx.rank).batch(4);
        }),
                                 o)
                    : model->Fit(Dataset::from_tensor_slices({x, y}).batch(8), o);
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(writer->Close().ok());
    std::rewind(o.out);
    char buf[4096] = {};
    std::string text(buf, std::fread(buf, 1, sizeof buf - 1, o.out));
    std::fclose(o.out);
    EXPECT_NE(text.find("Epoch 2/2 - 8 steps"), std::string::npos) << text;
    EXPECT_NE(text.find("val_accuracy: "), std::string::npos) << text;
    EXPECT_EQ(h->steps, 16);
    EXPECT_EQ(calls, 16);
    EXPECT_EQ(h->history["val_loss"].size(), 2u);
    EXPECT_GT(h->examples_per_second, 0);
    keys[distributed] = h->history;
    std::string events;
    for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
      events += testing::ReadFileOrDie(f.path().string());
    }
    for (const char* tag : {"batch_loss", "batch_accuracy", "examples_per_second",
                            "input_wait_fraction", "pipeline/", "epoch_val_loss"}) {
      EXPECT_NE(events.find(tag), std::string::npos) << tag;
    }
    // A callback's error stops Fit naming the step.
    FitOptions failing{.verbose = 0};
    failing.on_batch_end = [](const StepInfo& info) {
      return info.step == 1 ? Status::Cancelled("enough") : Status::OK();
    };
    Result<History> stopped =
        distributed ? model->Fit(strategy->DistributeDatasets([&](const InputContext&) {
          return Dataset::from_tensor_slices({x, y}).batch(4);
        }),
                                 failing)
                    : model->Fit(Dataset::from_tensor_slices({x, y}).batch(4), failing);
    SLUICE_EXPECT_ERROR(stopped.status(), StatusCode::kCancelled, "fit: epoch 1 step 2: enough");
  }
  ASSERT_EQ(keys[0].size(), keys[1].size());
  for (auto a = keys[0].begin(), b = keys[1].begin(); a != keys[0].end(); ++a, ++b) {
    EXPECT_EQ(a->first, b->first);
  }
}

TEST(StrategyTest, DistributedValidationNeedsAStrategy) {
  auto [x, y] = Blobs(16, 1);
  auto strategy = CpuReplicas(2);
  auto model = Mlp(std::make_shared<SGD>());
  SLUICE_EXPECT_ERROR(model
                          ->Fit(Dataset::from_tensor_slices({x, y}).batch(4),
                                {.distributed_validation_data =
                                     strategy->DistributeDatasets([&](const InputContext&) {
                                       return Dataset::from_tensor_slices({x, y});
                                     }),
                                 .verbose = 0})
                          .status(),
                      StatusCode::kInvalidArgument, "no strategy for distributed_validation_data");
}

TEST(StrategyTest, ErrorsNameWhatIsWrong) {
  auto strategy = CpuReplicas(2);
  EXPECT_EQ(strategy->num_replicas_in_sync(), 2);
  EXPECT_TRUE(strategy->is_chief());
  EXPECT_EQ(*strategy->PerReplicaBatchSize(64), 32);
  SLUICE_EXPECT_ERROR(strategy->PerReplicaBatchSize(63), StatusCode::kInvalidArgument,
                      "does not divide evenly among 2 replicas");
  SLUICE_EXPECT_ERROR(MirroredStrategy::Create({.devices = {"cpu:0", "cpu:0"}}).status(),
                      StatusCode::kInvalidArgument, "listed twice");
  SLUICE_EXPECT_ERROR(MirroredStrategy::Create({.devices = {"tpu:0"}}).status(),
                      StatusCode::kInvalidArgument, "tpu");
  auto [x, y] = Blobs(16, 1);
  auto model = Mlp(std::make_shared<SGD>(), strategy);
  SLUICE_EXPECT_ERROR(model->Fit(Dataset::from_tensor_slices({x, y}).batch(4)).status(),
                      StatusCode::kInvalidArgument, "DistributeDatasets");
  DistributedDataset one;
  one.per_replica = {Dataset::from_tensor_slices({x, y}).batch(4)};
  SLUICE_EXPECT_ERROR(model->Fit(one, {.verbose = 0}).status(), StatusCode::kInvalidArgument,
                      "1 datasets for 2 local replicas");
  // A layer that cannot be copied into the replicas.
  class Custom : public Layer {
   public:
    Custom() : Layer("custom") {}
    Result<DeviceTensor> Call(const DeviceTensor& x, bool) override { return x; }
    Result<DeviceTensor> Backward(const DeviceTensor& dy) override { return dy; }
  };
  Sequential m;
  m.Add<Custom>();
  m.Add<Dense>(3);
  ASSERT_TRUE(m.Compile({.optimizer = std::make_shared<SGD>(),
                         .loss = std::make_shared<SparseCategoricalCrossentropy>(true),
                         .strategy = strategy})
                  .ok());
  SLUICE_EXPECT_ERROR(m.Fit(strategy->DistributeDatasets([&](const InputContext&) {
                         return Dataset::from_tensor_slices({x, y}).batch(4);
                       }),
                            {.verbose = 0})
                          .status(),
                      StatusCode::kInvalidArgument, "layer custom cannot be cloned");
}

}  // namespace
}  // namespace sluice::nn
