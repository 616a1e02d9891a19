// Training-step throughput of the tutorials' CNN (cats_vs_dogs: Rescaling,
// Conv 32 3x3 relu, MaxPool, Conv 32 5x5 relu, MaxPool, Flatten, Dense 64
// relu, Dense 2 softmax; Adam; sparse cross-entropy) on uint8
// [32, 256, 256, 3] batches, the GPU targets:
//   * BM_TrainStep/gpu: Sequential::TrainStep on gpu:0 (the GPU nn backend:
//     cuDNN convolutions, cuBLAS products, sluice's kernels for the rest);
//     bench/gpu/torch_train_step.py runs the same CNN and batch in PyTorch
//     on the same GPU, the reference the target names;
//   * BM_TrainStep/gpu_graph: the same step recorded once with
//     Sequential::CaptureTrainStep and replayed (a CUDA graph): the target
//     says graph replay must beat eager launch;
//   * BM_TrainStep/gpu_bf16 and /gpu_bf16_graph: the same two with the
//     mixed_bfloat16 policy (nn/policy.h: bfloat16 activations, float32
//     master weights); torch_train_step.py --bf16 is its reference;
//   * BM_TrainStep/cpu: the same step on the CPU backend, in the same run;
//   * BM_FitFromJpegs/prefetch_to_device:2 and :0: Fit on gpu:0 fed by a
//     decode-on-CPU pipeline (JPEG decode, random flip, batch, prefetch,
//     AUTOTUNE on all cores): images/s and the fraction of the time the
//     step waited for input; with 2 (Fit's default) the copy of batch N+1
//     overlaps step N (gpu::PrefetchToDevice), with 0 each batch is copied
//     on the backend's stream before its step;
//   * BM_TrainFromJpegsOnDevice: the decode-on-CPU, augment-on-GPU loop:
//     decode on the CPU, PrefetchToDevice, random flip on the backend's
//     stream, TrainStep on the device tensors; input_wait_fraction is the
//     time spent in DeviceIterator::Next() (the target: under 5%).
//   * BM_TrainFromJpegsNvjpeg: the same with the decode on the GPU too
//     (JpegBatchesToDevice: nvJPEG, fused random-resized crop and flip),
//     batch k+1 decoding during step k; input_wait_fraction is the time in
//     Next() and waiting for the batch's event (the target: under 5%);
//     /prefetch:0 does the stage's host work in Next(), /prefetch:2 on the
//     stage's own thread, 2 batches ahead (JpegBatchesOptions::prefetch).
//   * BM_TrainStep/gpu_heavy, /gpu_heavy_graph and /gpu_heavy_bf16: a
//     heavier CNN (five 3x3 convolutions of 32..256 channels on uint8
//     [128, 224, 224, 3]; MakeModel), so the work is not tuned to one small
//     net; torch_train_step.py --model heavy is its reference;
//   * BM_MlpStep/eager and /graph: the tutorials' Fashion-MNIST MLP step
//     (784 -> 128 relu -> 10, batch 32, SGD; bench/gpu/mlp_step.h) run call
//     by call, and captured once with gpu::CaptureNnStep and replayed: the
//     gain of graph replay over eager launch, as the tutorials measured
//     tf.function's (a small step, bound by launch overhead).
// Counters: images_per_s, and input_wait_fraction for Fit.
//
//   build/bench/gpu/gpu_train_bench --benchmark_min_time=2
//   SLUICE_BENCH_DEVICE=cpu:0 SLUICE_BENCH_SIDE=64 build/bench/gpu/gpu_train_bench
//       # gpu:0 served by the GPU backend's host loops: checks the path, slow
//
// Without a GPU (and without SLUICE_BENCH_DEVICE=cpu:0) the gpu cases are
// skipped with the reason.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <chrono>
#include "mlp_step.h"
#include "sluice/core/rng.h"

#include "sluice/device/physical_devices.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/policy.h"
#include "sluice/nn/sequential.h"
#include "sluice/ops/cuda/image_ops.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/jpeg.h"
#include "sluice/pipeline/cuda/jpeg_batches.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/prefetch_to_device.h"

namespace sluice::gpu {
namespace {

constexpr int64_t kBatch = 32;

int64_t Side() {
  const char* env = std::getenv("SLUICE_BENCH_SIDE");
  return env != nullptr ? std::atoll(env) : 256;
}

// gpu:0 served by the GPU, or by the host loops under
// SLUICE_BENCH_DEVICE=cpu:0; the reason when neither.
Status UseGpu() {
  static const Status status = [] {
    const char* env = std::getenv("SLUICE_BENCH_DEVICE");
    if (env != nullptr && Device::Parse(env).ok() && Device::Parse(env)->is_cpu()) {
      RegisterNnBackendOnHost();
      return Status::OK();
    }
    RegisterNnBackend();
    return GpuAvailability();
  }();
  return status;
}

// The models: the tutorials' CNN on [32, 256, 256, 3], and a heavier one
// so the work is not tuned to one small net: five 3x3 SAME convolutions
// (32, 64, 128, 256, 256 channels, each with ReLU and a 2x2 max pool) on
// [128, 224, 224, 3], Flatten, Dense 10 (torch_train_step.py --model heavy).
enum class ModelKind { kTutorial, kHeavy };
int64_t BatchOf(ModelKind kind) { return kind == ModelKind::kHeavy ? 128 : kBatch; }
int64_t SideOf(ModelKind kind) { return kind == ModelKind::kHeavy ? 224 : Side(); }

std::unique_ptr<nn::Sequential> MakeModel(ModelKind kind, Device device) {
  nn::SetRandomSeed(1);
  auto model =
      std::make_unique<nn::Sequential>(kind == ModelKind::kHeavy ? "heavy" : "cats_vs_dogs");
  const nn::Activation relu = nn::Activation::kRelu;
  model->Add<nn::Rescaling>(1.0f / 255);
  if (kind == ModelKind::kHeavy) {
    for (int64_t filters : {32, 64, 128, 256, 256}) {
      model->Add<nn::Conv2D>(filters, 3,
                             nn::Conv2DOptions{.padding = nn::Padding::kSame, .activation = relu});
      model->Add<nn::MaxPooling2D>();
    }
    model->Add<nn::Flatten>();
    model->Add<nn::Dense>(10, nn::DenseOptions{.activation = nn::Activation::kSoftmax});
  } else {
    model->Add<nn::Conv2D>(32, 3, nn::Conv2DOptions{.activation = relu});
    model->Add<nn::MaxPooling2D>();
    model->Add<nn::Conv2D>(32, 5, nn::Conv2DOptions{.activation = relu});
    model->Add<nn::MaxPooling2D>();
    model->Add<nn::Flatten>();
    model->Add<nn::Dense>(64, nn::DenseOptions{.activation = relu});
    model->Add<nn::Dense>(2, nn::DenseOptions{.activation = nn::Activation::kSoftmax});
  }
  if (!model->SetDevice(device).ok()) return nullptr;
  Status s = model->Compile({.optimizer = std::make_shared<nn::Adam>(),
                             .loss = std::make_shared<nn::SparseCategoricalCrossentropy>()});
  return s.ok() ? std::move(model) : nullptr;
}

// Prints the convolution algorithms gpu:0's backend chose (once per
// benchmark name), so a run's log says what cuDNN ran.
void PrintConvAlgorithms(const std::string& name) {
  static std::set<std::string> printed;
  if (!printed.insert(name).second) return;
  Result<nn::Backend*> b = nn::GetBackend(Device::Gpu(0));
  if (!b.ok()) return;
  Result<std::vector<ConvAlgorithm>> algos = ConvAlgorithms(**b);
  if (!algos.ok()) return;
  std::fprintf(stderr, "conv algorithms after %s (%zu):\n", name.c_str(), algos->size());
  for (const ConvAlgorithm& a : *algos) std::fprintf(stderr, "  %s\n", a.ToString().c_str());
}

// Smooth images with noise (JPEG-like content), labels alternating.
Tensor Images(int64_t n, int64_t side) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{n, side, side, 3}).value();
  Rng rng(5);
  auto v = t.flat<uint8_t>();
  for (int64_t i = 0; i < n * side * side; ++i) {
    const int64_t y = (i / side) % side, x = i % side;
    for (int c = 0; c < 3; ++c) {
      const double wave = 100 * std::sin(0.05 * (x + 2 * y + 40 * c + i / (side * side)));
      v[i * 3 + c] = static_cast<uint8_t>(120 + wave + rng.UniformInt(30));
    }
  }
  return t;
}

Tensor Labels(int64_t n) {
  Tensor t = Tensor::Allocate(DType::kInt32, Shape{n}).value();
  for (int64_t i = 0; i < n; ++i) t.flat<int32_t>()[i] = static_cast<int32_t>(i % 2);
  return t;
}

enum class StepMode { kCpu, kGpu, kGpuGraph, kGpuBf16, kGpuBf16Graph };

void BM_TrainStep(benchmark::State& state, StepMode mode, ModelKind kind = ModelKind::kTutorial) {
  if (mode != StepMode::kCpu) {
    if (Status s = UseGpu(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  const bool bf16 = mode == StepMode::kGpuBf16 || mode == StepMode::kGpuBf16Graph;
  nn::SetGlobalPolicy(bf16 ? nn::DTypePolicy::MixedBFloat16() : nn::DTypePolicy::Float32());
  auto model = MakeModel(kind, mode == StepMode::kCpu ? Device::Cpu() : Device::Gpu(0));
  nn::SetGlobalPolicy(nn::DTypePolicy::Float32());
  if (model == nullptr) return state.SkipWithError("the model could not be made");
  const int64_t batch = BatchOf(kind);
  const Tensor hx = Images(batch, SideOf(kind)), hy = Labels(batch);
  // The batch lives on the model's device, as torch_train_step.py's does:
  // the step is timed without its upload (a host batch adds a pageable
  // copy of 6.3 MB, 19 MB for the heavy model, to every step).
  Result<nn::Backend*> backend = nn::GetBackend(model->device());
  if (!backend.ok()) return state.SkipWithError(backend.status().ToString().c_str());
  Result<DeviceTensor> dx = (*backend)->ToDevice(hx), dy = (*backend)->ToDevice(hy);
  if (!dx.ok() || !dy.ok()) return state.SkipWithError("the batch could not be uploaded");
  const DeviceTensor& x = *dx;
  const DeviceTensor& y = *dy;
  for (int warm = 0; warm < 2; ++warm) {  // builds the layers, measures cuDNN's algorithms
    if (Result<double> l = model->TrainStep(x, y); !l.ok()) {
      return state.SkipWithError(l.status().ToString().c_str());
    }
  }
  if (mode != StepMode::kCpu) {
    PrintConvAlgorithms(std::string(kind == ModelKind::kHeavy ? "heavy" : "tutorial") +
                        (bf16 ? " bfloat16" : " float32"));
  }
  std::unique_ptr<nn::CapturedTrainStep> captured;
  if (mode == StepMode::kGpuGraph || mode == StepMode::kGpuBf16Graph) {
    Result<std::unique_ptr<nn::CapturedTrainStep>> c = model->CaptureTrainStep(x, y);
    if (!c.ok()) return state.SkipWithError(c.status().ToString().c_str());
    captured = std::move(*c);
    state.counters["nodes"] = static_cast<double>(captured->num_nodes());
  }
  for (auto _ : state) {
    // Both return the loss, so each waits for its step.
    Result<double> loss = captured ? captured->Run(x, y) : model->TrainStep(x, y);
    if (!loss.ok()) return state.SkipWithError(loss.status().ToString().c_str());
    benchmark::DoNotOptimize(*loss);
  }
  state.counters["images_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * batch), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_TrainStep, gpu, StepMode::kGpu)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, gpu_graph, StepMode::kGpuGraph)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, gpu_bf16, StepMode::kGpuBf16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, gpu_bf16_graph, StepMode::kGpuBf16Graph)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, cpu, StepMode::kCpu)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, gpu_heavy, StepMode::kGpu, ModelKind::kHeavy)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, gpu_heavy_graph, StepMode::kGpuGraph, ModelKind::kHeavy)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, gpu_heavy_bf16, StepMode::kGpuBf16, ModelKind::kHeavy)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

constexpr int64_t kJpegs = 64, kSteps = 20;

// kJpegs JPEGs (quality 90) decoded and flipped on the CPU when `flip`,
// labelled, repeated, batched and prefetched.
// kJpegs encoded images (quality 90) of Side() x Side().
std::vector<std::string> EncodedJpegs() {
  const Tensor images = Images(kJpegs, Side());
  std::vector<std::string> jpegs;
  for (int64_t i = 0; i < kJpegs; ++i) {
    Tensor one = images.Slice(i, i + 1).value().Reshape(Shape{Side(), Side(), 3}).value();
    jpegs.push_back(ops::EncodeJpeg(one, {.quality = 90}).value());
  }
  return jpegs;
}

Dataset JpegPipeline(bool flip) {
  const std::vector<std::string> jpegs = EncodedJpegs();
  auto decode = [flip](Element e, const MapContext& ctx) -> Result<Element> {
    SLUICE_ASSIGN_OR_RETURN(Tensor image,
                            ops::DecodeJpeg(e[0].scalar<std::string_view>(), {.channels = 3}));
    if (flip) {
      Rng rng = ctx.rng();
      SLUICE_ASSIGN_OR_RETURN(image, ops::RandomFlipLeftRight(std::move(image), rng));
    }
    return Element({std::move(image), e[1]});
  };
  return Dataset::from_tensor_slices({Tensor::FromStrings(jpegs).value(), Labels(kJpegs)})
      .repeat()
      .map(decode, {.parallelism = kAutotune, .name = "decode"})
      .batch(kBatch, {.drop_remainder = true})
      .prefetch(kAutotune);
}

void BM_FitFromJpegs(benchmark::State& state) {
  if (Status s = UseGpu(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  auto model = MakeModel(ModelKind::kTutorial, Device::Gpu(0));
  if (model == nullptr) return state.SkipWithError("the model could not be made");
  const Dataset input = JpegPipeline(/*flip=*/true);
  double wait = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    Result<nn::History> h = model->Fit(input, {.epochs = 1,
                                               .steps_per_epoch = kSteps,
                                               .verbose = 0,
                                               .prefetch_to_device = state.range(0)});
    if (!h.ok()) return state.SkipWithError(h.status().ToString().c_str());
    wait += h->input_wait_fraction;
    ++runs;
  }
  state.counters["images_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSteps * kBatch), benchmark::Counter::kIsRate);
  state.counters["input_wait_fraction"] = runs > 0 ? wait / runs : 0;
}
BENCHMARK(BM_FitFromJpegs)
    ->ArgName("prefetch_to_device")
    ->Arg(2)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_TrainFromJpegsOnDevice(benchmark::State& state) {
  if (Status s = UseGpu(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  auto model = MakeModel(ModelKind::kTutorial, Device::Gpu(0));
  if (model == nullptr) return state.SkipWithError("the model could not be made");
  nn::Backend* backend = nn::GetBackend(Device::Gpu(0)).value();
  Stream* stream = NnBackendStream(*backend).value();
  Result<DeviceIterator> it =
      PrefetchToDevice(JpegPipeline(/*flip=*/false), stream->device(), {.depth = 3});
  if (!it.ok()) return state.SkipWithError(it.status().ToString().c_str());
  Rng rng(9);
  using Clock = std::chrono::steady_clock;
  Clock::duration waited{}, total{};
  auto step = [&]() -> Status {
    const Clock::time_point t0 = Clock::now();
    SLUICE_ASSIGN_OR_RETURN(std::optional<DeviceElement> batch, it->Next());
    waited += Clock::now() - t0;
    if (!batch) return Status::OutOfRange("the input ended");
    SLUICE_RETURN_IF_ERROR(batch->WaitOn(*stream));
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor x, RandomFlipLeftRight((*batch)[0], rng, *stream));
    SLUICE_RETURN_IF_ERROR(model->TrainStep(x, (*batch)[1]).status());  // waits for the step
    total += Clock::now() - t0;
    return Status::OK();
  };
  for (int warm = 0; warm < 2; ++warm) {
    if (Status s = step(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  waited = total = {};
  for (auto _ : state) {
    for (int64_t i = 0; i < kSteps; ++i) {
      if (Status s = step(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
    }
  }
  state.counters["images_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSteps * kBatch), benchmark::Counter::kIsRate);
  state.counters["input_wait_fraction"] =
      total.count() > 0 ? static_cast<double>(waited.count()) / total.count() : 0;
}
BENCHMARK(BM_TrainFromJpegsOnDevice)->Unit(benchmark::kMillisecond)->UseRealTime();

// Decode on the GPU: the encoded JPEGs batched (no decode map), then
// JpegBatchesToDevice (nvJPEG on the stage's decode stream; the fused
// random-resized crop to Side() x Side() and flip on the backend's stream),
// TrainStep on the float32 batches. Batch k+1 is asked for before step k
// runs, so its decode overlaps the step; input_wait_fraction is the time
// spent in Next() (the host part of the decode) and waiting for the batch's
// event, over the step time (the target: under 5%).
void BM_TrainFromJpegsNvjpeg(benchmark::State& state) {
  if (Status s = UseGpu(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  auto model = MakeModel(ModelKind::kTutorial, Device::Gpu(0));
  if (model == nullptr) return state.SkipWithError("the model could not be made");
  nn::Backend* backend = nn::GetBackend(Device::Gpu(0)).value();
  Stream* stream = NnBackendStream(*backend).value();
  const std::vector<std::string> jpegs = EncodedJpegs();
  const Dataset input =
      Dataset::from_tensor_slices({Tensor::FromStrings(jpegs).value(), Labels(kJpegs)},
                                  {"image", "label"})
          .repeat()
          .batch(kBatch, {.drop_remainder = true})
          .prefetch(kAutotune);
  JpegBatchesOptions o;
  o.decoder.max_batch = static_cast<int>(kBatch);
  o.augment.size = {Side(), Side()};
  o.stream = stream;
  o.prefetch = static_cast<int>(state.range(0));
  Result<JpegBatchIterator> it = JpegBatchesToDevice(input, stream->device(), o);
  if (!it.ok()) return state.SkipWithError(it.status().ToString().c_str());
  using Clock = std::chrono::steady_clock;
  Clock::duration waited{}, total{};
  std::optional<DeviceElement> current;
  auto step = [&]() -> Status {
    const Clock::time_point t0 = Clock::now();
    if (!current) {
      SLUICE_ASSIGN_OR_RETURN(current, it->Next());
      if (!current) return Status::OutOfRange("the input ended");
    }
    SLUICE_RETURN_IF_ERROR(current->Wait());
    SLUICE_ASSIGN_OR_RETURN(std::optional<DeviceElement> next, it->Next());
    if (!next) return Status::OutOfRange("the input ended");
    waited += Clock::now() - t0;
    SLUICE_RETURN_IF_ERROR(
        model->TrainStep((*current)[0], (*current)[1]).status());  // waits for the step
    current = std::move(next);
    total += Clock::now() - t0;
    return Status::OK();
  };
  for (int warm = 0; warm < 2; ++warm) {
    if (Status s = step(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  waited = total = {};
  for (auto _ : state) {
    for (int64_t i = 0; i < kSteps; ++i) {
      if (Status s = step(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
    }
  }
  const JpegDecodeStats st = it->decoder_stats();
  state.counters["images_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSteps * kBatch), benchmark::Counter::kIsRate);
  state.counters["input_wait_fraction"] =
      total.count() > 0 ? static_cast<double>(waited.count()) / total.count() : 0;
  state.counters["hardware_decoded"] = static_cast<double>(st.hardware);
  state.counters["cpu_decoded"] = static_cast<double>(st.cpu);
}
BENCHMARK(BM_TrainFromJpegsNvjpeg)
    ->ArgName("prefetch")
    ->Arg(0)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_MlpStep(benchmark::State& state, bool graph) {
  if (Status s = UseGpu(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  nn::Backend* b = nn::GetBackend(Device::Gpu(0)).value();
  Result<mlp_step::Mlp> m = mlp_step::MakeMlp(*b, kBatch, 784, 128, 10, 1);
  if (!m.ok()) return state.SkipWithError(m.status().ToString().c_str());
  // One eager step first: library handles and plans are made outside a capture.
  if (Status s = mlp_step::Step(*b, *m); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  std::unique_ptr<CapturedNnStep> captured;
  if (graph) {
    Result<std::unique_ptr<CapturedNnStep>> c =
        CaptureNnStep(*b, [&] { return mlp_step::Step(*b, *m); });
    if (!c.ok()) return state.SkipWithError(c.status().ToString().c_str());
    captured = std::move(*c);
    state.counters["nodes"] = static_cast<double>(captured->num_nodes());
  }
  for (auto _ : state) {
    Status s = graph ? captured->Replay() : mlp_step::Step(*b, *m);
    if (s.ok()) s = b->Synchronize();  // per step, as TrainStep waits for its loss
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  state.counters["images_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_MlpStep, eager, false)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_MlpStep, graph, true)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace sluice::gpu

BENCHMARK_MAIN();
