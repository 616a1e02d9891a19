// sluice's collectives and data-parallel training steps under mpirun (rank
// 0 prints; without mpirun it runs as one rank).
//
//   mpirun -np 2 build/bench/distribute/mpi_bench
//
// BM_AllReduce/<bytes> alternates, round after round, Communicator::AllReduce
// (float32 sum, in place: what gradients go through) and MPI_Allreduce
// (MPI_IN_PLACE, MPI_FLOAT, MPI_SUM) on a communicator of its own, and
// reports both as bus bandwidth (NCCL's convention: bytes x 2(n-1)/n per
// second; the algorithm bandwidth when n = 1) from the median round, and
// their ratio (target: sluice at least 0.9 of bare MPI).
//
// BM_CrossDeviceOps/<bytes>/<flat> does the same for nn's gradient path (the host
// CrossDeviceOps averaging a list of 25 tensors: fused buckets, then a mean)
// against one MPI_Allreduce of all their bytes; flat:0 with every tensor in
// a buffer of its own (buckets packed), flat:1 with them side by side in
// one buffer, as Fit lays out gradients on the CPU (buckets reduced where
// they lie).
//
// BM_CnnStep/<global batch> trains the tutorials' CNN (Conv2D 32 3x3 relu,
// MaxPooling2D, Conv2D 64 3x3 relu, MaxPooling2D, Flatten, Dense 64 relu,
// Dense 10; Adam) on 64x64x3 images with MultiWorkerMirroredStrategy, the
// global batch split among the ranks, and reports the time per step and
// examples/s: run it with -np 1 and -np 2 to compare. Rounds alternate it
// with the same model whose gradient buckets are all-reduced while the
// backward pass goes on (CrossDeviceOptions::overlap): overlap_ms_per_step,
// and overlap_speedup = ms_per_step / overlap_ms_per_step. bucket_mb: the
// gradient buckets' size (the CNN's 3.3 MB of gradients make one bucket of
// 25 MB after the first, which only starts once the backward pass is done;
// with 1 MB the dense layer's 3.2 MB kernel is reduced while the
// convolutions' backward runs).
#include <benchmark/benchmark.h>

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/timing.h"
#include "sluice/distribute/communicator.h"
#include "sluice/distribute/mpi_communicator.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/cross_device_ops.h"
#include "sluice/nn/layers.h"
#include "sluice/nn/sequential.h"
#include "sluice/nn/strategy.h"

namespace sluice {
namespace {

using bench::Median;

std::shared_ptr<Communicator> g_comm;
MPI_Comm g_bare = MPI_COMM_NULL;
int g_cpu_threads = 1;  // the CPU backend's threads before any strategy

double Seconds(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Bytes x 2(n-1)/n per second (the algorithm bandwidth for n = 1).
double BusBandwidth(size_t bytes, double seconds) {
  const int n = g_comm->size();
  const double factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  return static_cast<double>(bytes) * factor / seconds;
}

// Times `fn` once, after every rank is ready (a barrier), as the slowest
// rank saw it.
template <typename Fn>
double Round(Fn fn) {
  MPI_Barrier(g_bare);
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  double t = Seconds(t0);
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, g_bare);
  return t;
}

void Report(benchmark::State& state, size_t bytes, const std::vector<double>& ours,
            const std::vector<double>& bare) {
  const double o = BusBandwidth(bytes, Median(ours)), b = BusBandwidth(bytes, Median(bare));
  state.counters["sluice_GBps"] = o / 1e9;
  state.counters["mpi_GBps"] = b / 1e9;
  state.counters["ratio"] = o / b;
  state.SetLabel(std::to_string(g_comm->size()) + " ranks");
}

void BM_AllReduce(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0)) / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 1.0f);
  std::vector<double> ours, bare;
  for (auto _ : state) {
    ours.push_back(Round([&] {
      if (!g_comm->AllReduce(a.data(), count, DType::kFloat32, ReduceOp::kSum).ok()) std::abort();
    }));
    bare.push_back(Round([&] {
      MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, g_bare);
    }));
    std::fill(a.begin(), a.end(), 1.0f);  // keep the values finite
    std::fill(b.begin(), b.end(), 1.0f);
  }
  Report(state, count * sizeof(float), ours, bare);
}
BENCHMARK(BM_AllReduce)
    ->ArgName("bytes")
    ->Arg(4 << 10)
    ->Arg(256 << 10)
    ->Arg(4 << 20)
    ->Arg(25 << 20)
    ->Arg(64 << 20)
    ->Iterations(15)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_CrossDeviceOps(benchmark::State& state) {
  const size_t total = static_cast<size_t>(state.range(0)) / sizeof(float);
  nn::Backend& cpu = *nn::GetBackend(Device::Cpu()).value();
  std::unique_ptr<nn::CrossDeviceOps> ops = nn::MakeHostCrossDeviceOps(cpu, *g_comm);
  // 25 gradients of uneven sizes, as a model's layers have.
  // flat:1 as Fit lays them out on the CPU: one buffer, sliced.
  const bool flat = state.range(1) != 0;
  DeviceTensor buffer = *cpu.Zeros(DType::kFloat32, Shape{static_cast<int64_t>(total)});
  std::vector<DeviceTensor> grads;
  std::vector<DeviceTensor*> ptrs;
  size_t left = total;
  for (int i = 0; i < 25 && left > 0; ++i) {
    const size_t n = i == 24 ? left : std::max<size_t>(1, left / 4);
    const auto at = static_cast<int64_t>(total - left);
    grads.push_back(flat ? *buffer.Slice(at, at + static_cast<int64_t>(n))
                         : *cpu.Zeros(DType::kFloat32, Shape{static_cast<int64_t>(n)}));
    left -= n;
  }
  for (auto& g : grads) ptrs.push_back(&g);
  std::vector<float> b(total, 1.0f);
  std::vector<double> ours, bare;
  for (auto _ : state) {
    ours.push_back(Round([&] {
      if (!ops->AllReduceMean(std::span<DeviceTensor* const>(ptrs)).ok()) std::abort();
    }));
    bare.push_back(Round([&] {
      MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, g_bare);
    }));
  }
  Report(state, total * sizeof(float), ours, bare);
}
BENCHMARK(BM_CrossDeviceOps)
    ->ArgNames({"bytes", "flat"})
    ->ArgsProduct({{1 << 20, 25 << 20, 100 << 20}, {0, 1}})
    ->Iterations(9)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The CNN under MultiWorkerMirroredStrategy, gradients all-reduced after
// the backward pass or overlapped with it; null if it cannot be built.
struct Cnn {
  std::shared_ptr<nn::MultiWorkerMirroredStrategy> strategy;
  std::unique_ptr<nn::Sequential> model;
};
Cnn MakeCnn(bool overlap, size_t bucket_bytes) {
  // Each Create divides the CPU backend's threads among the host's ranks:
  // start from the process's count every time.
  nn::Backend& cpu = *nn::GetBackend(Device::Cpu()).value();
  cpu.SetNumThreads(g_cpu_threads);
  nn::MultiWorkerOptions options{.communicator = g_comm};
  options.cross_device.overlap = overlap;
  options.cross_device.bucket_bytes = bucket_bytes;
  auto strategy = nn::MultiWorkerMirroredStrategy::Create(options);
  if (!strategy.ok()) return {};
  nn::SetRandomSeed(1);
  auto model = std::make_unique<nn::Sequential>();
  model->Add<nn::Rescaling>(1.0f / 255);
  model->Add<nn::Conv2D>(32, 3, nn::Conv2DOptions{.activation = nn::Activation::kRelu});
  model->Add<nn::MaxPooling2D>();
  model->Add<nn::Conv2D>(64, 3, nn::Conv2DOptions{.activation = nn::Activation::kRelu});
  model->Add<nn::MaxPooling2D>();
  model->Add<nn::Flatten>();
  model->Add<nn::Dense>(64, nn::DenseOptions{.activation = nn::Activation::kRelu});
  model->Add<nn::Dense>(10);
  if (!model
           ->Compile({.optimizer = std::make_shared<nn::Adam>(),
                      .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                      .strategy = *strategy})
           .ok()) {
    return {};
  }
  return {*strategy, std::move(model)};
}

void BM_CnnStep(benchmark::State& state) {
  const int64_t global = state.range(0);
  const size_t bucket_bytes = static_cast<size_t>(state.range(1)) << 20;
  Cnn after = MakeCnn(false, bucket_bytes), overlapped = MakeCnn(true, bucket_bytes);
  if (!after.model || !overlapped.model) return state.SkipWithError("building the model");
  const int64_t per = global / after.strategy->num_replicas_in_sync();
  // One batch per replica, repeated: the input costs nothing.
  Tensor x = *Tensor::Allocate(DType::kUInt8, Shape{per, 64, 64, 3});
  Tensor y = *Tensor::Allocate(DType::kInt64, Shape{per});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.flat<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
  for (int64_t i = 0; i < per; ++i) y.flat<int64_t>()[i] = i % 10;
  constexpr int64_t kSteps = 10;
  nn::DistributedDataset train = after.strategy->DistributeDatasets([&](const InputContext&) {
    return Dataset::from_tensors(Element({x, y})).repeat(kSteps);
  });
  for (Cnn* c : {&after, &overlapped}) {
    if (!c->model->Fit(train, {.epochs = 1, .verbose = 0}).ok()) {
      return state.SkipWithError("warm-up");
    }
  }
  // Rounds alternate the two, so that load on the machine shifts both.
  std::vector<double> step, step_overlapped;
  for (auto _ : state) {
    for (Cnn* c : {&after, &overlapped}) {
      const double t = Round([&] {
                         if (!c->model->Fit(train, {.epochs = 1, .verbose = 0}).ok()) std::abort();
                       }) /
                       kSteps;
      (c == &after ? step : step_overlapped).push_back(t);
    }
  }
  const double t = Median(step), to = Median(step_overlapped);
  state.counters["ms_per_step"] = t * 1e3;
  state.counters["examples_per_s"] = static_cast<double>(global) / t;
  state.counters["overlap_ms_per_step"] = to * 1e3;
  state.counters["overlap_speedup"] = t / to;
  state.SetLabel(std::to_string(g_comm->size()) + " ranks, " + std::to_string(per) + " per rank");
}
BENCHMARK(BM_CnnStep)
    ->ArgNames({"global_batch", "bucket_mb"})
    ->Args({32, 25})
    ->Args({128, 25})
    ->Args({128, 1})
    ->Iterations(7)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  // The command line first, before MPI starts: --help prints this line and
  // Google Benchmark's flags (exit status 0); anything else it does not
  // know is refused.
  constexpr const char* kUsage = "usage: mpirun -np N mpi_bench [--benchmark_* flags]\n";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) std::fputs(kUsage, stdout);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  // MPI itself, under mpirun or as a single rank without it.
  auto comm = sluice::MpiCommunicator::Create();
  if (!comm.ok()) {
    std::fprintf(stderr, "mpi_bench: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  sluice::g_comm = std::move(*comm);
  sluice::g_cpu_threads = sluice::nn::GetBackend(sluice::Device::Cpu()).value()->num_threads();
  MPI_Comm_dup(MPI_COMM_WORLD, &sluice::g_bare);
  if (sluice::g_comm->rank() != 0) std::freopen("/dev/null", "w", stdout);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  MPI_Comm_free(&sluice::g_bare);
  return 0;
}
