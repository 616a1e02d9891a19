// The tutorials' Fashion-MNIST classifier (Flatten, Dense 128 relu, Dense
// 10), trained with a custom loop in the GradientTape style, a checkpoint
// every 100 batches (model, optimizer, step counter and the input
// iterator's position) and TensorBoard logs; `--mode=test` restores the
// latest checkpoint and reports the test accuracy.
//
//   build/samples/fashion_mnist_mlp                 # train (converts the data once)
//   build/samples/fashion_mnist_mlp --mode=test     # evaluate the latest checkpoint
//   build/samples/fashion_mnist_mlp --device gpu    # train on gpu:0 (built with CUDA)
//   tensorboard --logdir fashion-mnist-mlp/logs
//
// Python, for comparison (tensorflow.org/tutorials/keras/classification and
// the training-checkpoints guide):
//   model = keras.Sequential([layers.Flatten(input_shape=(28, 28)),
//                             layers.Dense(128, activation="relu"), layers.Dense(10)])
//   ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=model, iterator=it)
//   manager = tf.train.CheckpointManager(ckpt, "./tf_ckpts", max_to_keep=3)
#include <cstdio>
#include <string>

#include "command_line.h"
#include "gpu_support.h"
#include "sample_data.h"
#include "sluice/nn/checkpoint.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"
#include "sluice/records/summary_writer.h"

namespace nn = sluice::nn;
using sluice::Device;
using sluice::DeviceTensor;
using sluice::Status;

namespace {

template <typename T>
T Check(sluice::Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "fashion_mnist_mlp: %s: %s\n", what, r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*r);
}
void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "fashion_mnist_mlp: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train the tutorials' Fashion-MNIST MLP with checkpoints and TensorBoard logs."};
  std::string mode = "train", work = "fashion-mnist-mlp", train_glob, test_glob;
  int epochs = 10, batch = 32, max_steps = 0;
  uint64_t seed = 1;
  app.add_option("--mode", mode, "train, or test (restore the latest checkpoint and evaluate)")
      ->check(CLI::IsMember({"train", "test"}))
      ->capture_default_str();
  app.add_option("--dir", work, "Working folder: data/, ckpt/ and logs/ go here")
      ->capture_default_str();
  app.add_option("--train", train_glob,
                 "Training TFRecords [default: DIR/data/train-*.tfrecord, "
                 "converted from Debian's dataset-fashion-mnist]");
  app.add_option("--test", test_glob, "Test TFRecords [default: DIR/data/test-*.tfrecord]");
  app.add_option("--epochs", epochs, "Epochs to train")->capture_default_str();
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--max-steps", max_steps, "Stop after this many steps (0: no limit)");
  app.add_option("--seed", seed, "Seed of the weights and the shuffles")->capture_default_str();
  std::string device = "cpu";
  app.add_option("--device", device, "cpu, or gpu[:N] when sluice is built with CUDA")
      ->capture_default_str();
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen
  samples::EnableGpuDevices();
  const Device dev = Check(Device::Parse(device), "--device");
  nn::Backend& backend = *Check(nn::GetBackend(dev), "--device");

  if (train_glob.empty() || test_glob.empty()) {
    Check(samples::EnsureFashionRecords(work + "/data"), "preparing Fashion-MNIST");
    if (train_glob.empty()) train_glob = work + "/data/train-*.tfrecord";
    if (test_glob.empty()) test_glob = work + "/data/test-*.tfrecord";
  }
  sluice::Dataset train =
      samples::ImagePipeline(train_glob, {.train = true, .batch = batch, .seed = seed});
  sluice::Dataset test = samples::ImagePipeline(test_glob, {.train = false, .batch = 256});

  nn::SetRandomSeed(seed);
  nn::Sequential model("fashion_mnist_mlp");
  model.Add<nn::Rescaling>(1.0f / 255);
  model.Add<nn::Flatten>();
  model.Add<nn::Dense>(128, nn::DenseOptions{.activation = nn::Activation::kRelu});
  model.Add<nn::Dense>(10);
  Check(model.SetDevice(dev), "--device");
  auto optimizer = std::make_shared<nn::Adam>();
  auto loss = std::make_shared<nn::SparseCategoricalCrossentropy>(/*from_logits=*/true);
  auto accuracy = std::make_shared<nn::SparseCategoricalAccuracy>();
  Check(model.Compile({.optimizer = optimizer, .loss = loss, .metrics = {accuracy}}), "compile");

  // The input iterator over all epochs, so its position is checkpointed.
  sluice::Iterator it = Check(train.repeat(epochs).iterator(), "starting the input pipeline");
  nn::Variable step("step", sluice::Tensor::Scalar<int64_t>(0), /*trainable=*/false);
  nn::Checkpoint ckpt;
  Check(ckpt.Track("model", &model), "checkpoint");
  Check(ckpt.Track("optimizer", optimizer.get()), "checkpoint");
  Check(ckpt.Track("step", &step), "checkpoint");
  Check(ckpt.Track("iterator", &it), "checkpoint");
  nn::CheckpointManager manager(&ckpt, work + "/ckpt", /*max_to_keep=*/3);
  if (auto latest = manager.latest_checkpoint()) {
    auto restored = Check(ckpt.Restore(*latest), "restoring");
    std::printf("Restored from %s (step %lld)\n", latest->c_str(),
                static_cast<long long>(step.value().data<int64_t>()[0]));
  } else if (mode == "test") {
    std::fprintf(stderr, "fashion_mnist_mlp: no checkpoint in %s/ckpt; train first\n",
                 work.c_str());
    return 1;
  } else {
    std::printf("Initializing from scratch.\n");
  }

  if (mode == "train") {
    auto writer = Check(sluice::SummaryWriter::Create(work + "/logs/train"), "TensorBoard logs");
    int64_t& steps = step.value().data<int64_t>()[0];
    nn::Mean epoch_loss("loss");
    for (;;) {
      if (max_steps > 0 && steps >= max_steps) break;
      auto next = Check(it.next(), "reading a batch");
      if (!next) break;
      const sluice::Element& b = *next;
      // The GradientTape pattern: gradients, then the optimizer applies them.
      auto grads = Check(model.ComputeGradients(b[0], b[1]), "computing gradients");
      Check(optimizer->ApplyGradients(std::span<DeviceTensor* const>(grads.grads),
                                      std::span<nn::Variable* const>(grads.variables)),
            "applying gradients");
      Check(accuracy->UpdateState(backend, Check(backend.ToDevice(b[1]), "labels"),
                                  grads.predictions),
            "accuracy");
      epoch_loss.Update(grads.loss);
      ++steps;
      if (steps % 100 == 0) {
        std::string path = Check(manager.Save(), "saving a checkpoint");
        Check(writer.Scalar("loss", static_cast<float>(epoch_loss.result()), steps), "log");
        Check(writer.Scalar("accuracy", static_cast<float>(accuracy->result()), steps), "log");
        std::printf("step %6lld  loss %.4f  accuracy %.4f  saved %s\n",
                    static_cast<long long>(steps), epoch_loss.result(), accuracy->result(),
                    path.c_str());
        epoch_loss.Reset();
        accuracy->Reset();
      }
    }
    Check(manager.Save(), "saving the final checkpoint");
    Check(writer.Close(), "closing the logs");
  }
  auto results = Check(model.Evaluate(test), "evaluating");
  std::printf("Test accuracy: %.4f  (loss %.4f)\n", results["accuracy"], results["loss"]);
  return 0;
}
