// A sluice input pipeline feeding a LibTorch model through DLPack, without
// copying a batch: from_tensor_slices over a small synthetic classification
// set -> shuffle -> batch -> prefetch, each batch's tensors handed to
// torch with at::fromDLPack(sluice::ToDLPack(t).value()), and a two-layer
// torch::nn model trained on them for a few epochs.
//
//   build/samples/libtorch_dlpack --epochs 5
//
// Built only when CMake finds LibTorch (docs/interop.md):
//   TORCH_CMAKE=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
//   cmake -S . -B build -DSLUICE_TORCH_DIR="$TORCH_CMAKE" && ninja -C build libtorch_dlpack
//
// The data: 16 features uniform in [-1, 1), the label the largest of four
// fixed random linear scores of them, so a small net learns it quickly.
//
// Include order: LibTorch carries its own, newer DLPack header
// (ATen/dlpack.h) under the include guard of Debian's 0.6 one, so whichever
// comes first is the one compiled; both declare DLManagedTensor with the
// same layout. torch first is the safe order: its headers may name newer
// DLPack declarations (torch 2.15's compile either way).
#include <torch/torch.h>
// (torch first: see above)
#include <ATen/DLConvertor.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "command_line.h"
#include "sluice/core/dlpack.h"
#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"

namespace {

constexpr int64_t kFeatures = 16;
constexpr int64_t kClasses = 4;

// examples x kFeatures float32 features and their int64 labels.
std::vector<sluice::Tensor> MakeData(int64_t examples, uint64_t seed) {
  sluice::Rng rng(seed);
  std::vector<float> w(kFeatures * kClasses);
  for (float& v : w) v = rng.Uniform(-1.0f, 1.0f);
  std::vector<float> x(examples * kFeatures);
  std::vector<int64_t> y(examples);
  for (int64_t i = 0; i < examples; ++i) {
    float* row = &x[i * kFeatures];
    for (int64_t f = 0; f < kFeatures; ++f) row[f] = rng.Uniform(-1.0f, 1.0f);
    float best = 0;
    for (int64_t c = 0; c < kClasses; ++c) {
      float score = 0;
      for (int64_t f = 0; f < kFeatures; ++f) score += row[f] * w[f * kClasses + c];
      if (c == 0 || score > best) best = score, y[i] = c;
    }
  }
  return {sluice::Tensor::FromVector<float>(x, sluice::Shape{examples, kFeatures}).value(),
          sluice::Tensor::FromVector<int64_t>(y, sluice::Shape{examples}).value()};
}

// The batch tensor as a torch tensor over the same bytes. The managed
// tensor holds a copy of `t` (so its Buffer) until torch drops it.
at::Tensor ToTorch(const sluice::Tensor& t) { return at::fromDLPack(sluice::ToDLPack(t).value()); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "A sluice pipeline (from_tensor_slices, shuffle, batch, prefetch) feeding a LibTorch "
      "model through DLPack, without copying."};
  int epochs = 5;
  int64_t batch = 64, examples = 4096;
  uint64_t seed = 7;
  app.add_option("--epochs", epochs, "passes over the data")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--examples", examples, "synthetic examples")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  app.add_option("--seed", seed, "data, shuffle and torch seed")->capture_default_str();
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;

  try {
    const std::vector<sluice::Tensor> data = MakeData(examples, seed);
    sluice::Dataset ds = sluice::Dataset::from_tensor_slices(data, {"x", "y"})
                             .shuffle(examples, {.seed = seed})
                             .batch(batch, {.drop_remainder = true})
                             .prefetch(2);
    if (!ds.status().ok()) {
      std::fprintf(stderr, "libtorch_dlpack: %s\n", ds.status().ToString().c_str());
      return 1;
    }

    torch::manual_seed(seed);
    torch::nn::Sequential model(torch::nn::Linear(kFeatures, 64), torch::nn::ReLU(),
                                torch::nn::Linear(64, kClasses));
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));

    bool checked_zero_copy = false;
    double first_loss = 0, last_loss = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      double loss_sum = 0;
      int64_t steps = 0;
      for (const sluice::Element& b : ds) {  // throws sluice::Error on failure
        at::Tensor x = ToTorch(b[0]);
        at::Tensor y = ToTorch(b[1]);
        if (!checked_zero_copy) {
          std::printf("zero copy: torch x.data_ptr() %p == sluice raw_data() %p, y %p == %p\n",
                      x.data_ptr(), b[0].raw_data(), y.data_ptr(), b[1].raw_data());
          if (x.data_ptr() != b[0].raw_data() || y.data_ptr() != b[1].raw_data()) {
            std::fprintf(stderr, "libtorch_dlpack: torch copied the batch\n");
            return 1;
          }
          std::printf("torch sees x %s %s, y %s %s\n", c10::toString(x.scalar_type()),
                      c10::str(x.sizes()).c_str(), c10::toString(y.scalar_type()),
                      c10::str(y.sizes()).c_str());
          checked_zero_copy = true;
        }
        optimizer.zero_grad();
        at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
        loss.backward();
        optimizer.step();
        loss_sum += loss.item<double>();
        ++steps;
      }
      if (steps == 0) {
        std::fprintf(stderr, "libtorch_dlpack: no full batch of %lld in %lld examples\n",
                     static_cast<long long>(batch), static_cast<long long>(examples));
        return 1;
      }
      last_loss = loss_sum / static_cast<double>(steps);
      if (epoch == 1) first_loss = last_loss;
      std::printf("epoch %d: %lld steps, mean loss %.4f\n", epoch, static_cast<long long>(steps),
                  last_loss);
    }
    if (epochs > 1 && !(last_loss < first_loss)) {
      std::fprintf(stderr, "libtorch_dlpack: the loss did not go down (%.4f -> %.4f)\n", first_loss,
                   last_loss);
      return 1;
    }
    std::printf("loss went from %.4f to %.4f\n", first_loss, last_loss);
  } catch (const std::exception& e) {  // sluice::Error, c10::Error
    std::fprintf(stderr, "libtorch_dlpack: %s\n", e.what());
    return 1;
  }
  return 0;
}
