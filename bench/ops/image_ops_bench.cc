// Resize and image-op throughput on a 500x375 RGB uint8 image (an ImageNet
// JPEG's typical size), one core.
//
// Same-run references, each measured once per run before the first timed
// loop:
//   * memcpy of the 562,500 input bytes: `x_memcpy` on the resize
//     benchmarks is their images/s over memcpy's images/s (the physical
//     limit of touching the input once);
//   * a plain nearest-neighbour gather to 224x224 (uint8, precomputed
//     indices, no dtype change): `x_gather` is images/s over its images/s;
//   * for flips, normalize and convert: bytes_per_second counts bytes read
//     plus bytes written, and `x_memcpy` compares it with memcpy's (which
//     also reads and writes each byte) on a buffer of the output's size.
//
// Rates and ratios use this thread's CPU time (the reference's too), so a
// busy machine slows both alike.
//
//   bench/ops/image_ops_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "common/timing.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/resize.h"

namespace sluice::ops {
namespace {

constexpr int64_t kH = 375, kW = 500, kC = 3, kOut = 224;

const Tensor& Image() {
  static const Tensor img = [] {
    Tensor t = Tensor::Allocate(DType::kUInt8, {kH, kW, kC}).value();
    uint32_t x = 12345;
    auto f = t.flat<uint8_t>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      x = x * 1664525u + 1013904223u;
      f[i] = static_cast<uint8_t>(((i / kC) % kW) / 2 + (x >> 28));  // gradient + noise
    }
    return t;
  }();
  return img;
}

// CPU seconds used by this thread.
double CpuSeconds() { return bench::ThreadCpuSeconds(); }

// Calls fn() repeatedly for ~0.3 s of CPU time; returns calls per second.
template <typename Fn>
double MeasureRate(Fn fn) {
  for (int i = 0; i < 3; ++i) fn();  // warm caches
  int64_t n = 0;
  const double start = CpuSeconds();
  double elapsed = 0;
  while (elapsed < 0.3) {
    for (int i = 0; i < 16; ++i) fn();
    n += 16;
    elapsed = CpuSeconds() - start;
  }
  return static_cast<double>(n) / elapsed;
}

// memcpy calls per second for `bytes`.
double MemcpyRate(size_t bytes) {
  std::vector<uint8_t> src(bytes, 1), dst(bytes);
  return MeasureRate([&] {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  });
}

double InputMemcpyRate() {
  static const double rate = MemcpyRate(static_cast<size_t>(kH * kW * kC));
  return rate;
}

double GatherRate() {
  static const double rate = [] {
    std::vector<int32_t> ys(kOut), xs(kOut);
    for (int64_t i = 0; i < kOut; ++i) {
      ys[i] = static_cast<int32_t>((i * kH) / kOut);
      xs[i] = static_cast<int32_t>((i * kW) / kOut);
    }
    std::vector<uint8_t> out(kOut * kOut * kC);
    const uint8_t* in = Image().flat<uint8_t>().data();
    return MeasureRate([&] {
      uint8_t* o = out.data();
      for (int64_t y = 0; y < kOut; ++y) {
        const uint8_t* row = in + ys[y] * kW * kC;
        for (int64_t x = 0; x < kOut; ++x, o += kC) std::memcpy(o, row + xs[x] * kC, kC);
      }
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
    });
  }();
  return rate;
}

void ReportImages(benchmark::State& state, double start) {
  const double seconds = CpuSeconds() - start;
  const double images_per_s = static_cast<double>(state.iterations()) / seconds;
  state.SetItemsProcessed(state.iterations());
  state.counters["x_memcpy"] = images_per_s / InputMemcpyRate();
  state.counters["x_gather"] = images_per_s / GatherRate();
}

// Resize 500x375x3 uint8 -> 224x224 into a preallocated output.
void BM_Resize(benchmark::State& state) {
  const ResizeOptions o{.method = static_cast<ResizeMethod>(state.range(0)),
                        .antialias = state.range(1) != 0};
  Tensor out =
      Tensor::Allocate(ResizeOutputDType(DType::kUInt8, o.method), {kOut, kOut, kC}).value();
  InputMemcpyRate();
  GatherRate();
  const double start = CpuSeconds();
  for (auto _ : state) {
    Status s = ResizeInto(Image(), &out, o);
    benchmark::DoNotOptimize(s);
  }
  ReportImages(state, start);
}
BENCHMARK(BM_Resize)
    ->ArgNames({"method", "antialias"})
    ->Args({static_cast<int>(ResizeMethod::kBilinear), 0})
    ->Args({static_cast<int>(ResizeMethod::kBilinear), 1})
    ->Args({static_cast<int>(ResizeMethod::kNearest), 0})
    ->Args({static_cast<int>(ResizeMethod::kArea), 0})
    ->Args({static_cast<int>(ResizeMethod::kBicubic), 0})
    ->Args({static_cast<int>(ResizeMethod::kBicubic), 1});

// The allocating form, bilinear: what a pipeline map function pays.
void BM_ResizeAllocating(benchmark::State& state) {
  InputMemcpyRate();
  GatherRate();
  const double start = CpuSeconds();
  for (auto _ : state) {
    Result<Tensor> r = Resize(Image(), {kOut, kOut});
    benchmark::DoNotOptimize(r);
  }
  ReportImages(state, start);
}
BENCHMARK(BM_ResizeAllocating);

// The ImageNet training crop: sample a window, resize it (no crop copy).
void BM_RandomResizedCrop(benchmark::State& state) {
  InputMemcpyRate();
  GatherRate();
  uint64_t i = 0;
  const double start = CpuSeconds();
  for (auto _ : state) {
    Rng rng(7, i++);
    Result<Tensor> r = RandomResizedCrop(Image(), {kOut, kOut}, rng);
    benchmark::DoNotOptimize(r);
  }
  ReportImages(state, start);
}
BENCHMARK(BM_RandomResizedCrop);

// Byte-throughput ops: bytes read + written, against memcpy of the output.
template <typename Fn>
void RunBytes(benchmark::State& state, size_t out_bytes, Fn fn) {
  const double memcpy_bytes_per_s = 2.0 * out_bytes * MemcpyRate(out_bytes);
  const size_t bytes = Image().byte_size() + out_bytes;
  const double start = CpuSeconds();
  for (auto _ : state) fn();
  const double seconds = CpuSeconds() - start;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["x_memcpy"] = state.iterations() * bytes / seconds / memcpy_bytes_per_s;
}

void BM_FlipLeftRight(benchmark::State& state) {
  Tensor out = Tensor::Allocate(DType::kUInt8, Image().shape()).value();
  RunBytes(state, out.byte_size(),
           [&] { benchmark::DoNotOptimize(FlipLeftRightInto(Image(), &out)); });
}
BENCHMARK(BM_FlipLeftRight);

void BM_FlipUpDown(benchmark::State& state) {
  Tensor out = Tensor::Allocate(DType::kUInt8, Image().shape()).value();
  RunBytes(state, out.byte_size(),
           [&] { benchmark::DoNotOptimize(FlipUpDownInto(Image(), &out)); });
}
BENCHMARK(BM_FlipUpDown);

void BM_NormalizeUint8ToFloat(benchmark::State& state) {
  Tensor out = Tensor::Allocate(DType::kFloat32, Image().shape()).value();
  const float mean[3] = {123.675f, 116.28f, 103.53f}, sd[3] = {58.395f, 57.12f, 57.375f};
  RunBytes(state, out.byte_size(),
           [&] { benchmark::DoNotOptimize(NormalizeInto(Image(), mean, sd, &out)); });
}
BENCHMARK(BM_NormalizeUint8ToFloat);

void BM_ConvertImageDtypeUint8ToFloat(benchmark::State& state) {
  RunBytes(state, Image().num_elements() * sizeof(float),
           [&] { benchmark::DoNotOptimize(ConvertImageDtype(Image(), DType::kFloat32)); });
}
BENCHMARK(BM_ConvertImageDtypeUint8ToFloat);

}  // namespace
}  // namespace sluice::ops

BENCHMARK_MAIN();
