// GPU feeding and augmentation throughput, against the device's own copy
// bandwidth measured in the same run:
//   * BM_CopyDeviceToDevice: Stream::CopyAsync of a batch-sized block on the
//     device, the reference for the augmentation ops (bytes read + written);
//   * BM_CopyHostToDevice: pinned host memory to the device, the reference
//     for prefetch_to_device;
//   * BM_Augment/<op>: the image-op twins on a uint8 [N, 256, 256, 3] batch
//     (crop to 224, random flip, normalize, cast to bfloat16, and the chain);
//   * BM_PrefetchToDevice: batches of that shape from an in-memory pipeline,
//     staged and copied by prefetch_to_device while the consumer stream
//     waits for each and drops it with RecordUse.
//   * BM_PoolForward, BM_PoolBackward, BM_BiasAdd, BM_BiasGrad, BM_Relu,
//     BM_ReluBackward: the nn backend's own bandwidth-bound kernels at the
//     tutorials' CNN's first layer, [32, 256, 256, 16] activations (max
//     pooling 2x2 stride 2), float32 (/0) and bfloat16 (/1); bytes are the
//     least each must move (every input read once, every output written
//     once; max pooling's int64 argmax included), over kNnCalls calls per
//     iteration, so bytes_per_second against BM_CopyDeviceToDevice is the
//     fraction of memory bandwidth reached.
//   * BM_NcclAllReduce/<bytes>: nn's NCCL cross-device ops on one rank
//     (nn/cuda/nccl_ops.h: AllReduceMean of one float32 tensor in place, on the
//     nn backend's stream): the smoke test and bandwidth the GPU machine
//     allows with one GPU (several GPUs are needed for a bus bandwidth).
// Each reports bytes_per_second; the ratio to its reference is the figure
// of merit (docs/perf.md). Every iteration ends with the stream drained, so
// the time is the device's, plus one synchronization.
//
//   build/bench/gpu/gpu_bench --benchmark_min_time=1
//   SLUICE_BENCH_DEVICE=cpu:0 build/bench/gpu/gpu_bench   # the host backend
//
// Without a GPU every case is skipped with the reason.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "sluice/device/device_memory.h"
#include "sluice/device/physical_devices.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/region_provider.h"
#include "sluice/device/stream.h"
#include "sluice/distribute/in_process.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/cross_device_ops.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/cuda/nccl_ops.h"
#include "sluice/ops/cuda/image_ops.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/prefetch_to_device.h"

namespace sluice::gpu {
namespace {

constexpr int64_t kSide = 256, kCropSide = 224;

// The device to measure, or the reason it cannot be.
Result<Device> BenchDevice() {
  const char* env = std::getenv("SLUICE_BENCH_DEVICE");
  SLUICE_ASSIGN_OR_RETURN(Device d, Device::Parse(env != nullptr ? env : "gpu:0"));
  if (!d.is_cpu()) SLUICE_RETURN_IF_ERROR(GpuAvailability());
  return d;
}

struct Setup {
  Device device;
  std::unique_ptr<Stream> stream;
};

// The stream, or false after skipping the benchmark with the reason.
bool Start(benchmark::State& state, Setup* s) {
  Result<Device> d = BenchDevice();
  if (!d.ok()) {
    state.SkipWithError(d.status().ToString().c_str());
    return false;
  }
  Result<std::unique_ptr<Stream>> stream = NewStream(*d);
  if (!stream.ok()) {
    state.SkipWithError(stream.status().ToString().c_str());
    return false;
  }
  s->device = *d;
  s->stream = std::move(*stream);
  return true;
}

bool Check(benchmark::State& state, const Status& status) {
  if (status.ok()) return true;
  state.SkipWithError(status.ToString().c_str());
  return false;
}

Tensor HostBatch(int64_t n) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{n, kSide, kSide, 3}).value();
  auto v = t.flat<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  return t;
}

void BM_CopyDeviceToDevice(benchmark::State& state) {
  Setup s;
  if (!Start(state, &s)) return;
  const Shape shape{state.range(0), kSide, kSide, 3};
  auto a = AllocateDeviceTensor(s.device, DType::kUInt8, shape, s.stream.get());
  auto b = AllocateDeviceTensor(s.device, DType::kUInt8, shape, s.stream.get());
  if (!Check(state, a.status()) || !Check(state, b.status())) return;
  for (auto _ : state) {
    if (!Check(state, s.stream->CopyAsync(b->raw_data(), a->raw_data(), a->byte_size(),
                                          CopyDirection::kDeviceToDevice)) ||
        !Check(state, s.stream->Synchronize())) {
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<int64_t>(a->byte_size()));
}

void BM_CopyHostToDevice(benchmark::State& state) {
  Setup s;
  if (!Start(state, &s)) return;
  const Shape shape{state.range(0), kSide, kSide, 3};
  auto pool = s.device.is_cpu() ? PinnedHostPool::CreateWithProvider(NewHostRegionProvider())
                                : PinnedHostPool::Create();
  if (!Check(state, pool.status())) return;
  auto d = AllocateDeviceTensor(s.device, DType::kUInt8, shape, s.stream.get());
  if (!Check(state, d.status())) return;
  auto host = pool->Acquire(d->byte_size());
  if (!Check(state, host.status())) return;
  std::memset(host->data(), 1, d->byte_size());
  for (auto _ : state) {
    if (!Check(state, CopyToDeviceAsync(host->data(), *d, *s.stream)) ||
        !Check(state, s.stream->Synchronize())) {
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(d->byte_size()));
}

enum Op { kCrop, kFlip, kNormalize, kCast, kChain };  // BM_Augment's second argument

void BM_Augment(benchmark::State& state) {
  Setup s;
  if (!Start(state, &s)) return;
  const int64_t n = state.range(0);
  const Op op = static_cast<Op>(state.range(1));
  auto batch = CopyToDevice(HostBatch(n), *s.stream);
  if (!Check(state, batch.status())) return;
  Rng rng(1);
  int64_t bytes = 0;  // read + written per iteration
  for (auto _ : state) {
    Result<DeviceTensor> out = Status::OK();
    switch (op) {
      case kCrop: out = Crop(*batch, {16, 16, kCropSide, kCropSide}, *s.stream); break;
      case kFlip: out = RandomFlipLeftRight(*batch, rng, *s.stream); break;
      case kNormalize:
        out =
            Normalize(*batch, {123.675f, 116.28f, 103.53f}, {58.395f, 57.12f, 57.375f}, *s.stream);
        break;
      case kCast: out = Cast(*batch, DType::kBFloat16, *s.stream); break;
      case kChain: {
        out = Crop(*batch, {16, 16, kCropSide, kCropSide}, *s.stream);
        if (out.ok()) out = RandomFlipLeftRight(*out, rng, *s.stream);
        if (out.ok()) {
          out =
              Normalize(*out, {123.675f, 116.28f, 103.53f}, {58.395f, 57.12f, 57.375f}, *s.stream);
        }
        if (out.ok()) out = Cast(*out, DType::kBFloat16, *s.stream);
        break;
      }
    }
    if (!Check(state, out.status()) || !Check(state, s.stream->Synchronize())) return;
    // The chain counts its input and final output only.
    bytes = static_cast<int64_t>(op == kCrop || op == kChain
                                     ? n * kCropSide * kCropSide * 3
                                     : static_cast<int64_t>(batch->byte_size())) +
            static_cast<int64_t>(out->byte_size());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  static const char* kNames[] = {"crop", "random_flip", "normalize", "cast_bf16",
                                 "crop_flip_normalize_cast"};
  state.SetLabel(kNames[op]);
}

void BM_PrefetchToDevice(benchmark::State& state) {
  Setup s;
  if (!Start(state, &s)) return;
  const int64_t n = state.range(0);
  const Tensor host = HostBatch(n);
  Dataset ds = Dataset::from_tensors(Element({host})).repeat();
  auto it = PrefetchToDevice(ds, s.device, {.depth = 2});
  if (!Check(state, it.status())) return;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto batch = it->Next();
    if (!Check(state, batch.status()) || !batch->has_value()) return;
    if (!Check(state, (*batch)->WaitOn(*s.stream)) ||
        !Check(state, (*batch)->RecordUse(*s.stream)) || !Check(state, s.stream->Synchronize())) {
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(host.byte_size()));
  const double elapsed_ns = static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  const PrefetchToDeviceStats stats = it->stats();
  state.counters["consumer_waits"] = static_cast<double>(stats.consumer_waits);
  // The share of the loop the consumer spent in Next() waiting for a batch.
  state.counters["wait_fraction"] = static_cast<double>(stats.consumer_wait_ns) / elapsed_ns;
}

// --- The nn backend's bandwidth-bound kernels ------------------------------

constexpr int64_t kNnBatch = 32, kNnChannels = 16;
constexpr int kNnCalls = 8;  // per iteration, then one Synchronize

// The nn backend on the bench device, made once; null after skipping.
nn::Backend* NnBackend(benchmark::State& state) {
  static Result<std::unique_ptr<nn::Backend>> backend =
      []() -> Result<std::unique_ptr<nn::Backend>> {
    SLUICE_ASSIGN_OR_RETURN(Device d, BenchDevice());
    return NewNnBackend(d);
  }();
  if (!backend.ok()) {
    state.SkipWithError(backend.status().ToString().c_str());
    return nullptr;
  }
  return backend->get();
}

// A `shape` tensor of `dtype` holding values spread over [-1, 1).
Result<DeviceTensor> NnTensor(nn::Backend& b, DType dtype, const Shape& shape) {
  SLUICE_ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(DType::kFloat32, shape));
  auto v = host.flat<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(static_cast<uint32_t>(i * 2654435761u) >> 8) * 0x1.0p-23f - 1.0f;
  }
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor f, b.ToDevice(host));
  if (dtype == DType::kFloat32) return f;
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor t, b.Allocate(dtype, shape));
  SLUICE_RETURN_IF_ERROR(b.Cast(f, 1.0f, &t));
  return t;
}

enum NnOp { kPoolForward, kPoolBackward, kBiasAdd, kBiasGrad, kRelu, kReluBackward };

// kNnCalls calls of `op` per iteration on float32 (range(0) == 0) or
// bfloat16 activations; the bias and its gradient stay float32.
void RunNnOp(benchmark::State& state, NnOp op) {
  nn::Backend* b = NnBackend(state);
  if (b == nullptr) return;
  const DType dt = state.range(0) == 0 ? DType::kFloat32 : DType::kBFloat16;
  const int64_t elem = state.range(0) == 0 ? 4 : 2;
  const Shape xs{kNnBatch, kSide, kSide, kNnChannels};
  const Shape ys{kNnBatch, kSide / 2, kSide / 2, kNnChannels};
  const nn::Window2D window{2, 2, 2, 2, nn::Padding::kValid};
  auto x = NnTensor(*b, dt, xs);
  auto y = NnTensor(*b, dt, ys);
  auto dx = NnTensor(*b, dt, xs);
  auto bias = NnTensor(*b, DType::kFloat32, Shape{kNnChannels});
  if (!Check(state, x.status()) || !Check(state, y.status()) || !Check(state, dx.status()) ||
      !Check(state, bias.status())) {
    return;
  }
  DeviceTensor ws;
  if (!Check(state, b->Pool2DForward(nn::PoolMode::kMax, *x, window, &*y, &ws)) ||
      !Check(state, b->Synchronize())) {
    return;
  }
  const int64_t nx = xs.num_elements(), ny = ys.num_elements();
  int64_t bytes = 0;  // per call
  switch (op) {
    case kPoolForward: bytes = nx * elem + ny * (elem + 8); break;
    case kPoolBackward: bytes = ny * (elem + 8) + nx * elem; break;
    case kBiasAdd: bytes = 2 * nx * elem; break;
    case kBiasGrad: bytes = nx * elem; break;
    case kRelu: bytes = 2 * nx * elem; break;
    case kReluBackward: bytes = 3 * nx * elem; break;
  }
  for (auto _ : state) {
    for (int i = 0; i < kNnCalls; ++i) {
      Status s;
      switch (op) {
        case kPoolForward: s = b->Pool2DForward(nn::PoolMode::kMax, *x, window, &*y, &ws); break;
        case kPoolBackward:
          s = b->Pool2DBackward(nn::PoolMode::kMax, *x, *y, *y, ws, window, &*dx);
          break;
        case kBiasAdd: s = b->BiasAdd(*bias, &*x); break;
        case kBiasGrad: s = b->BiasGrad(*x, 0.0f, &*bias); break;
        case kRelu: s = b->ActivationForward(nn::Activation::kRelu, *x, &*dx); break;
        case kReluBackward: s = b->ActivationBackward(nn::Activation::kRelu, *x, *dx, &*dx); break;
      }
      if (!Check(state, s)) return;
    }
    if (!Check(state, b->Synchronize())) return;
  }
  state.SetBytesProcessed(state.iterations() * kNnCalls * bytes);
  state.SetLabel(state.range(0) == 0 ? "float32" : "bfloat16");
}

void BM_PoolForward(benchmark::State& state) { RunNnOp(state, kPoolForward); }
void BM_PoolBackward(benchmark::State& state) { RunNnOp(state, kPoolBackward); }
void BM_BiasAdd(benchmark::State& state) { RunNnOp(state, kBiasAdd); }
void BM_BiasGrad(benchmark::State& state) { RunNnOp(state, kBiasGrad); }
void BM_Relu(benchmark::State& state) { RunNnOp(state, kRelu); }
void BM_ReluBackward(benchmark::State& state) { RunNnOp(state, kReluBackward); }

// NCCL's all-reduce on one rank, the bytes of one float32 tensor per
// iteration (NCCL's "algorithm bandwidth"; a bus bandwidth needs 2+ ranks).
void BM_NcclAllReduce(benchmark::State& state) {
  nn::Backend* b = NnBackend(state);
  if (b == nullptr) return;
  if (!Check(state, NcclAvailability())) return;
  RegisterNcclCrossDeviceOps();
  auto comms = InProcessGroup::Create(1);
  Result<std::unique_ptr<nn::CrossDeviceOps>> ops = nn::MakeCrossDeviceOps(*b, *comms[0]);
  if (!Check(state, ops.status())) return;
  if ((*ops)->name().find("NCCL") == std::string::npos) {
    state.SkipWithError(("not NCCL: " + (*ops)->name()).c_str());
    return;
  }
  const int64_t n = state.range(0) / static_cast<int64_t>(sizeof(float));
  Result<DeviceTensor> t = NnTensor(*b, DType::kFloat32, Shape{n});
  if (!Check(state, t.status())) return;
  DeviceTensor* list[] = {&*t};
  for (auto _ : state) {
    if (!Check(state, (*ops)->AllReduceMean(list)) || !Check(state, b->Synchronize())) return;
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  state.SetLabel((*ops)->name());
}

BENCHMARK(BM_NcclAllReduce)
    ->Arg(int64_t{1} << 12)
    ->Arg(int64_t{1} << 20)
    ->Arg(int64_t{25} << 20)
    ->Arg(int64_t{256} << 20)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CopyDeviceToDevice)->Arg(256)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CopyHostToDevice)->Arg(256)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Augment)
    ->ArgsProduct({{256}, {kCrop, kFlip, kNormalize, kCast, kChain}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefetchToDevice)->Arg(256)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PoolForward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PoolBackward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BiasAdd)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BiasGrad)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Relu)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReluBackward)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice::gpu

BENCHMARK_MAIN();
