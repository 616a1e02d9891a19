// The tutorials' cats_vs_dogs CNN over any folder of images with one
// subfolder per class: converts it to sharded TFRecords with `sluice
// convert images`, then trains Conv2D 32 3x3 relu, MaxPool, Conv2D 32 5x5
// relu, MaxPool, Flatten, Dense 64 relu, Dense N softmax with Keras-style
// fit() on an AUTOTUNE pipeline (parallel decode and resize, shuffle,
// batch, prefetch), with validation, a checkpoint per epoch and TensorBoard
// logs.
//
//   build/samples/image_classifier PHOTOS/ --size 128 --epochs 10
//   build/samples/image_classifier TRAIN/ --test-dir TEST/ --size 0 --channels 1
//
// Without --test-dir, the last of 10 shuffled shards is held out for
// validation. `make demo` runs it on Fashion-MNIST written out as a folder.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "command_line.h"
#include "gpu_support.h"
#include "sample_data.h"
#include "sluice/nn/checkpoint.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/policy.h"
#include "sluice/nn/sequential.h"
#include "sluice/records/summary_writer.h"

namespace nn = sluice::nn;
namespace fs = std::filesystem;
using sluice::Device;

namespace {

template <typename T>
T Check(sluice::Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "image_classifier: %s: %s\n", what, r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*r);
}
void Check(const sluice::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "image_classifier: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// Converts `dir` to PREFIX-*.tfrecord unless PREFIX-labels.txt exists.
// Returns the number of classes (from the labels file).
int ConvertOnce(const std::string& dir, const std::string& prefix, int shards) {
  if (!fs::exists(prefix + "-labels.txt")) {
    if (!samples::RunCli("convert images " + samples::Quote(dir) + " --out " +
                         samples::Quote(prefix) + " --shards " + std::to_string(shards) +
                         " --shuffle --seed 1")) {
      std::fprintf(stderr, "image_classifier: converting %s failed\n", dir.c_str());
      std::exit(1);
    }
  }
  std::ifstream labels(prefix + "-labels.txt");
  int classes = 0;
  for (std::string line; std::getline(labels, line);) classes += !line.empty() && line[0] != '#';
  return classes;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train the tutorials' cats_vs_dogs CNN on a folder of images (one subfolder per "
      "class)."};
  std::string dir, test_dir, work = "image-classifier", device = "cpu", arch = "cats_vs_dogs";
  std::string policy = "float32";
  int size = 256, channels = 3, epochs = 10, batch = 32, threads = 0;
  uint64_t seed = 1;
  app.add_option("DIR", dir, "Folder with one subfolder of images per class")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--test-dir", test_dir,
                 "Folder of the same classes for validation "
                 "[default: hold out a tenth of DIR]");
  app.add_option("--dir", work, "Working folder: records/, ckpt/ and logs/ go here")
      ->capture_default_str();
  app.add_option("--size", size, "Resize images to SIZE x SIZE (0: keep; all must then match)")
      ->capture_default_str();
  app.add_option("--channels", channels, "1 (grayscale) or 3 (RGB)")
      ->check(CLI::IsMember({1, 3}))
      ->capture_default_str();
  app.add_option("--model", arch,
                 "cats_vs_dogs: the tutorial's CNN (Conv 32 3x3, Conv 32 5x5, Dense 64); compact: "
                 "Conv 32 3x3 same, Conv 64 3x3 same, dropout, Dense 128 (small images)")
      ->check(CLI::IsMember({"cats_vs_dogs", "compact"}))
      ->capture_default_str();
  app.add_option("--epochs", epochs, "Epochs")->capture_default_str();
  app.add_option("--batch", batch, "Batch size")->capture_default_str();
  app.add_option("--threads", threads, "Training threads [default: all cores]");
  app.add_option("--device", device, "cpu, or gpu[:N] when sluice is built with CUDA")
      ->capture_default_str();
  app.add_option("--dtype-policy", policy,
                 "float32, or mixed_bfloat16: bfloat16 activations with float32 weights "
                 "(Keras's mixed precision; fast on GPUs with bfloat16 tensor cores)")
      ->check(CLI::IsMember({"float32", "mixed_bfloat16"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the weights and the shuffles")->capture_default_str();
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen

  // The device first: a typo should not wait for a conversion.
  samples::EnableGpuDevices();
  Device dev = Check(Device::Parse(device), "--device");
  nn::Backend* backend = Check(nn::GetBackend(dev), "--device");
  if (threads > 0) backend->SetNumThreads(threads);

  // 1. Image folder -> sharded TFRecords (once).
  std::string records = work + "/records";
  fs::create_directories(records);
  int classes = ConvertOnce(dir, records + "/train", test_dir.empty() ? 10 : 8);
  std::string train_glob = records + "/train-*.tfrecord", test_glob;
  if (!test_dir.empty()) {
    ConvertOnce(test_dir, records + "/test", 2);
    test_glob = records + "/test-*.tfrecord";
  } else {
    train_glob = records + "/train-0000[0-8]-of-00010.tfrecord";
    test_glob = records + "/train-00009-of-00010.tfrecord";
  }
  if (classes < 2) {
    std::fprintf(stderr, "image_classifier: %s needs at least 2 class folders\n", dir.c_str());
    return 1;
  }

  // 2. The input pipeline: decode + resize in parallel (AUTOTUNE), shuffle,
  //    batch, prefetch.
  samples::ImagePipelineOptions in{.train = true,
                                   .batch = batch,
                                   .channels = channels,
                                   .height = size,
                                   .width = size,
                                   .seed = seed};
  sluice::Dataset train = samples::ImagePipeline(train_glob, in);
  in.train = false;
  sluice::Dataset test = samples::ImagePipeline(test_glob, in);

  // The input pipeline alone for a few seconds: the rate training can get.
  {
    sluice::Iterator it = Check(train.iterator(), "starting the input pipeline");
    auto t0 = std::chrono::steady_clock::now();
    int64_t images = 0;
    double seconds = 0;
    while (seconds < 3.0) {
      auto b = Check(it.next(), "reading");
      if (!b) break;
      images += (*b)[0].shape().dim(0);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::printf("Input pipeline alone: %.0f images/s over %.1f s\n", images / seconds, seconds);
  }

  // 3. The model, its layers in the dtype policy asked for.
  nn::SetGlobalPolicy(Check(nn::DTypePolicy::FromName(policy), "--dtype-policy"));
  nn::SetRandomSeed(seed);
  nn::Sequential model("image_classifier");
  Check(model.SetDevice(dev), "--device");
  const auto relu = nn::Activation::kRelu;
  model.Add<nn::Rescaling>(1.0f / 255);
  if (arch == "cats_vs_dogs") {
    model.Add<nn::Conv2D>(32, 3, nn::Conv2DOptions{.activation = relu});
    model.Add<nn::MaxPooling2D>();
    model.Add<nn::Conv2D>(32, 5, nn::Conv2DOptions{.activation = relu});
    model.Add<nn::MaxPooling2D>();
    model.Add<nn::Flatten>();
    model.Add<nn::Dense>(64, nn::DenseOptions{.activation = relu});
  } else {  // compact: two same-padded 3x3 convs with dropout, for small images
    model.Add<nn::Conv2D>(32, 3,
                          nn::Conv2DOptions{.padding = nn::Padding::kSame, .activation = relu});
    model.Add<nn::MaxPooling2D>();
    model.Add<nn::Conv2D>(64, 3,
                          nn::Conv2DOptions{.padding = nn::Padding::kSame, .activation = relu});
    model.Add<nn::MaxPooling2D>();
    model.Add<nn::Dropout>(0.25f);
    model.Add<nn::Flatten>();
    model.Add<nn::Dense>(128, nn::DenseOptions{.activation = relu});
    model.Add<nn::Dropout>(0.5f);
  }
  model.Add<nn::Dense>(classes, nn::DenseOptions{.activation = nn::Activation::kSoftmax});
  auto optimizer = std::make_shared<nn::Adam>();
  Check(model.Compile({.optimizer = optimizer,
                       .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(),
                       .metrics = {std::make_shared<nn::SparseCategoricalAccuracy>()}}),
        "compile");
  std::printf("Training on %s with %s\n", dev.ToString().c_str(), backend->name().c_str());

  // 4. Checkpoints each epoch (resuming from the latest) and TensorBoard logs.
  nn::Checkpoint ckpt;
  Check(ckpt.Track("model", &model), "checkpoint");
  Check(ckpt.Track("optimizer", optimizer.get()), "checkpoint");
  nn::CheckpointManager manager(&ckpt, work + "/ckpt", /*max_to_keep=*/2);
  if (auto latest = manager.latest_checkpoint()) {
    Check(ckpt.Restore(*latest), "restoring");
    std::printf("Restored from %s\n", latest->c_str());
  }
  auto writer = Check(sluice::SummaryWriter::Create(work + "/logs"), "TensorBoard logs");

  nn::FitOptions fit{.epochs = epochs, .validation_data = test};
  fit.summary_writer = &writer;
  fit.on_epoch_end = [&](int, const std::map<std::string, double>&) {
    return manager.Save().status();
  };
  nn::History h = Check(model.Fit(train, fit), "training");
  std::printf("%s", model.Summary().c_str());
  auto results = Check(model.Evaluate(test), "evaluating");
  std::printf("Training: %.0f images/s, input wait %.1f%% of the time\n", h.examples_per_second,
              100 * h.input_wait_fraction);
  std::printf("Test accuracy: %.4f  (loss %.4f)\n", results["accuracy"], results["loss"]);
  Check(writer.Close(), "closing the logs");
  return 0;
}
