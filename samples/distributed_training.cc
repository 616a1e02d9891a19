// The tutorials' MirroredStrategy chapter in C++: the Fashion-MNIST
// classifier trained data-parallel, in one process over several replicas or
// over processes started by mpirun.
//
//   build/samples/distributed_training                      # MirroredStrategy, 1 replica
//   build/samples/distributed_training --replicas 2         # 2 CPU replicas, 1 process
//   mpirun -np 2 build/samples/distributed_training         # MultiWorkerMirroredStrategy
//
// Python, for comparison:
//   strategy = tf.distribute.MirroredStrategy()
//   with strategy.scope():
//       model = keras.Sequential([layers.Rescaling(1/255), layers.Flatten(),
//                                 layers.Dense(128, activation="relu"), layers.Dense(10)])
//       model.compile(optimizer="adam", loss=SparseCategoricalCrossentropy(from_logits=True),
//                     metrics=["accuracy"])
//   model.fit(dataset, epochs=3)   # dataset batched with the global batch size
//
// Every replica reads its exact share of the indexed TFRecords (RECORD
// sharding of one global shuffle); the global batch is split among the
// replicas. Only the chief writes the TensorBoard logs and the checkpoints.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "command_line.h"
#include "sample_data.h"
#include "sluice/distribute/cluster_resolver.h"
#include "sluice/nn/checkpoint.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"
#include "sluice/nn/strategy.h"
#include "sluice/records/summary_writer.h"

namespace nn = sluice::nn;
using sluice::Status;

namespace {

std::shared_ptr<sluice::Communicator> g_comm;  // to end the job on an error

void Fail(const Status& s, const char* what) {
  std::fprintf(stderr, "distributed_training: %s: %s\n", what, s.ToString().c_str());
  std::fflush(stderr);
  if (g_comm) g_comm->Abort(s);  // the other ranks must not wait for this one
  std::exit(1);
}
template <typename T>
T Check(sluice::Result<T> r, const char* what) {
  if (!r.ok()) Fail(r.status(), what);
  return std::move(*r);
}
void Check(const Status& s, const char* what) {
  if (!s.ok()) Fail(s, what);
}

// The files matching `pattern`, sorted.
std::vector<std::string> Files(const std::string& pattern) {
  std::vector<std::string> out;
  sluice::Iterator it = Check(sluice::Dataset::list_files(pattern).iterator(), "listing files");
  for (;;) {
    std::optional<sluice::Element> e = Check(it.next(), "listing files");
    if (!e) break;
    out.emplace_back((*e)[0].scalar<std::string_view>());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train the Fashion-MNIST classifier data-parallel (MirroredStrategy, or "
      "MultiWorkerMirroredStrategy under mpirun)."};
  std::string work = "distributed-training";
  int epochs = 3, replicas = 1;
  int64_t global_batch = 64;
  uint64_t seed = 1;
  app.add_option("--dir", work, "Working folder: data/, ckpt/ and logs/ go here")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "Epochs to train")->capture_default_str();
  app.add_option("--global-batch", global_batch, "Batch size over all replicas")
      ->capture_default_str();
  app.add_option("--replicas", replicas,
                 "CPU replicas in this process (MirroredStrategy; ignored under mpirun)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the weights and the shuffle")->capture_default_str();
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // The processes' communicator: MPI under mpirun or srun, else one rank.
  g_comm = Check(sluice::Connect(), "connecting the ranks");
  // Rank 0 converts Fashion-MNIST once while the others wait.
  if (g_comm->rank() == 0) {
    Check(samples::EnsureFashionRecords(work + "/data"), "preparing Fashion-MNIST");
  }
  Check(g_comm->Barrier(), "waiting for the data");

  std::shared_ptr<nn::Strategy> strategy;
  if (g_comm->size() > 1) {
    strategy = Check(nn::MultiWorkerMirroredStrategy::Create({.communicator = g_comm}), "strategy");
  } else {
    nn::MirroredOptions o;
    for (int r = 0; r < replicas; ++r) o.devices.push_back("cpu:" + std::to_string(r));
    strategy = Check(nn::MirroredStrategy::Create(o), "strategy");
  }
  const int64_t batch = Check(strategy->PerReplicaBatchSize(global_batch), "--global-batch");
  if (strategy->is_chief()) {
    std::printf("%s; global batch %lld, %lld per replica\n", strategy->Describe().c_str(),
                static_cast<long long>(global_batch), static_cast<long long>(batch));
  }

  const auto train_files = Files(work + "/data/train-*.tfrecord");
  const auto test_files = Files(work + "/data/test-*.tfrecord");
  auto decode = samples::DecodeImageRecord({});
  nn::DistributedDataset train = strategy->DistributeDatasets([&](const sluice::InputContext& c) {
    return sluice::TFRecordDataset(train_files)
        .global_shuffle({.seed = seed})
        .apply(sluice::distribute(c))
        .map(decode, {.parallelism = sluice::kAutotune, .name = "decode"})
        .batch(batch, {.drop_remainder = true})
        .prefetch(sluice::kAutotune);
  });
  nn::DistributedDataset test = strategy->DistributeDatasets([&](const sluice::InputContext& c) {
    return sluice::TFRecordDataset(test_files)
        .apply(sluice::distribute(c, {.pad_for_eval = true}))  // every image counted once
        .map(decode, {.parallelism = sluice::kAutotune, .name = "decode"})
        .batch(256);
  });

  nn::SetRandomSeed(seed);
  nn::Sequential model("fashion_mnist");
  model.Add<nn::Rescaling>(1.0f / 255);
  model.Add<nn::Flatten>();
  model.Add<nn::Dense>(128, nn::DenseOptions{.activation = nn::Activation::kRelu});
  model.Add<nn::Dense>(10);
  auto optimizer = std::make_shared<nn::Adam>();
  Check(model.Compile({.optimizer = optimizer,
                       .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                       .metrics = {std::make_shared<nn::SparseCategoricalAccuracy>()},
                       .strategy = strategy}),
        "compile");

  // Only the chief writes: the others would race it for the same files.
  std::optional<sluice::SummaryWriter> writer;
  nn::Checkpoint ckpt;
  Check(ckpt.Track("model", &model), "checkpoint");
  std::unique_ptr<nn::CheckpointManager> manager;
  if (strategy->is_chief()) {
    writer = Check(sluice::SummaryWriter::Create(work + "/logs/train"), "TensorBoard logs");
    manager = std::make_unique<nn::CheckpointManager>(&ckpt, work + "/ckpt", 3);
  }
  nn::FitOptions fit{.epochs = epochs, .verbose = strategy->is_chief() ? 2 : 0};
  fit.summary_writer = writer ? &*writer : nullptr;
  fit.on_epoch_end = [&](int, const std::map<std::string, double>&) -> Status {
    if (manager) return manager->Save().status();
    return Status::OK();
  };
  auto history = Check(model.Fit(train, fit), "training");
  auto results = Check(model.Evaluate(test, {.verbose = 0}), "evaluating");
  if (strategy->is_chief()) {
    std::printf("Trained %lld steps on %d replicas at %.0f examples/s\n",
                static_cast<long long>(history.steps), strategy->num_replicas_in_sync(),
                history.examples_per_second);
    std::printf("Test accuracy: %.4f (loss %.4f)\n", results["accuracy"], results["loss"]);
    if (manager && manager->latest_checkpoint()) {
      std::printf("Checkpoint: %s\n", manager->latest_checkpoint()->c_str());
    }
  }
  return 0;
}
