// One training step (forward, loss, backward, Adam update) of the
// tutorials' models on the CPU backend, on random data: the sluice side of
// bench/nn/compare_keras.sh, which runs Keras on the same cores and prints
// the ratio.
//
//   taskset -c 0,1 build/bench/nn/train_step_bench --benchmark_filter=Cnn
#include <benchmark/benchmark.h>

#include "sluice/core/rng.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"

namespace nn = sluice::nn;
using sluice::Tensor;

namespace {

// MLP: Flatten, Dense 128 relu, Dense 10 (logits).
// CNN: Conv2D 32 3x3 relu, MaxPool, Conv2D 32 5x5 relu, MaxPool, Flatten,
//      Dense 64 relu, Dense 10 softmax (the cats_vs_dogs network on 28x28x1).
std::unique_ptr<nn::Sequential> Make(bool cnn) {
  nn::SetRandomSeed(1);
  auto m = std::make_unique<nn::Sequential>();
  if (cnn) {
    m->Add<nn::Conv2D>(32, 3, nn::Conv2DOptions{.activation = nn::Activation::kRelu});
    m->Add<nn::MaxPooling2D>();
    m->Add<nn::Conv2D>(32, 5, nn::Conv2DOptions{.activation = nn::Activation::kRelu});
    m->Add<nn::MaxPooling2D>();
    m->Add<nn::Flatten>();
    m->Add<nn::Dense>(64, nn::DenseOptions{.activation = nn::Activation::kRelu});
    m->Add<nn::Dense>(10, nn::DenseOptions{.activation = nn::Activation::kSoftmax});
  } else {
    m->Add<nn::Flatten>();
    m->Add<nn::Dense>(128, nn::DenseOptions{.activation = nn::Activation::kRelu});
    m->Add<nn::Dense>(10);
  }
  (void)m->Compile({.optimizer = std::make_shared<nn::Adam>(),
                    .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(!cnn),
                    .metrics = {std::make_shared<nn::SparseCategoricalAccuracy>()}});
  return m;
}

void TrainStep(benchmark::State& state, bool cnn) {
  const int64_t batch = state.range(0);
  auto model = Make(cnn);
  Tensor x = *Tensor::Allocate(sluice::DType::kFloat32, sluice::Shape{batch, 28, 28, 1});
  Tensor y = *Tensor::Allocate(sluice::DType::kInt64, sluice::Shape{batch});
  sluice::Rng rng(2);
  for (float& v : x.flat<float>()) v = rng.UniformFloat();
  for (int64_t& v : y.flat<int64_t>()) v = static_cast<int64_t>(rng.UniformInt(10));
  for (int i = 0; i < 3; ++i) (void)model->TrainStep(x, y);  // build, prime caches
  for (auto _ : state) {
    auto loss = model->TrainStep(x, y);
    if (!loss.ok()) {
      state.SkipWithError(std::string(loss.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(*loss);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_TrainStepMlp(benchmark::State& s) { TrainStep(s, false); }
void BM_TrainStepCnn(benchmark::State& s) { TrainStep(s, true); }
BENCHMARK(BM_TrainStepMlp)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TrainStepCnn)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
