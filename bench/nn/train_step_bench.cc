// One training step (forward, loss, backward, Adam update) of the
// tutorials' models on the CPU backend, on random data: the sluice side of
// bench/nn/compare_keras.sh, which runs Keras on the same cores and prints
// the ratio. BM_FitTiny and BM_FitMlp time Fit's loop against a hand-written loop of
// TrainStep over the same dataset (`ratio`: what the fit loop's
// bookkeeping costs per step).
//
//   taskset -c 0,1 build/bench/nn/train_step_bench --benchmark_filter=Cnn
#include <benchmark/benchmark.h>

#include "common/timing.h"
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

// Fit over kSteps batches against iterator.next() + TrainStep over the same
// batches, alternately, in CPU time of the process (robust to a shared
// machine); both build and warm up first. The tiny model (Dense 10 on 16
// features) makes the per-step cost of the loop itself visible.
void FitLoop(benchmark::State& state, bool tiny) {
  constexpr int64_t kSteps = 50;
  const int64_t batch = state.range(0);
  std::unique_ptr<nn::Sequential> model;
  if (tiny) {
    nn::SetRandomSeed(1);
    model = std::make_unique<nn::Sequential>();
    model->Add<nn::Dense>(10);
    (void)model->Compile({.optimizer = std::make_shared<nn::Adam>(),
                          .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                          .metrics = {std::make_shared<nn::SparseCategoricalAccuracy>()}});
  } else {
    model = Make(false);
  }
  const sluice::Shape shape =
      tiny ? sluice::Shape{kSteps * batch, 16} : sluice::Shape{kSteps * batch, 28, 28};
  Tensor x = *Tensor::Allocate(sluice::DType::kFloat32, shape);
  Tensor y = *Tensor::Allocate(sluice::DType::kInt64, sluice::Shape{kSteps * batch});
  sluice::Rng rng(2);
  for (float& v : x.flat<float>()) v = rng.UniformFloat();
  for (int64_t& v : y.flat<int64_t>()) v = static_cast<int64_t>(rng.UniformInt(10));
  const sluice::Dataset data = sluice::Dataset::from_tensor_slices({x, y}).batch(batch);
  auto fit = [&] {
    auto h = model->Fit(data, {.epochs = 1, .verbose = 0});
    return h.ok() ? sluice::Status::OK() : h.status();
  };
  auto hand = [&]() -> sluice::Status {
    SLUICE_ASSIGN_OR_RETURN(sluice::Iterator it, data.iterator());
    for (;;) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<sluice::Element> e, it.next());
      if (!e) return sluice::Status::OK();
      SLUICE_ASSIGN_OR_RETURN(double loss, model->TrainStep((*e)[0], (*e)[1]));
      benchmark::DoNotOptimize(loss);
    }
  };
  if (sluice::Status s = hand(); s.ok()) s = fit(), benchmark::DoNotOptimize(s);  // build, warm up
  double t_fit = 0, t_hand = 0;
  for (auto _ : state) {
    double t0 = sluice::bench::ProcessCpuSeconds();
    sluice::Status s = hand();
    t_hand += sluice::bench::ProcessCpuSeconds() - t0;
    t0 = sluice::bench::ProcessCpuSeconds();
    if (s.ok()) s = fit();
    t_fit += sluice::bench::ProcessCpuSeconds() - t0;
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  const double steps = static_cast<double>(state.iterations() * kSteps);
  state.counters["fit_us_per_step"] = 1e6 * t_fit / steps;
  state.counters["hand_us_per_step"] = 1e6 * t_hand / steps;
  state.counters["ratio"] = t_fit / t_hand;
  state.SetItemsProcessed(state.iterations() * kSteps * batch);
}
void BM_FitTiny(benchmark::State& s) { FitLoop(s, true); }
void BM_FitMlp(benchmark::State& s) { FitLoop(s, false); }

void BM_TrainStepMlp(benchmark::State& s) { TrainStep(s, false); }
void BM_TrainStepCnn(benchmark::State& s) { TrainStep(s, true); }
BENCHMARK(BM_TrainStepMlp)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TrainStepCnn)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FitTiny)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FitMlp)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
