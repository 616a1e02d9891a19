// The fused decode + random crop + resize path against the unfused one
// (decode the whole image, crop, resize) on the same images and windows,
// measured in the same run (target: fused >= 1.8x at 224x224 output), on
// the images as they are and on the same images losslessly re-encoded with a
// restart marker every MCU (AddJpegRestartMarkers, what `sluice convert
// images --restart-interval 1` stores), whose crops decode only the restart
// segments the window covers.
//
// Images: the JPEGs under $SLUICE_BENCH_IMAGES (e.g. the ImageNet-like set
// of scripts/make-imagenet-like.sh), at most 256 of them; unset, 64
// photo-like 500x375 quality-90 images made here.
//
//   SLUICE_BENCH_IMAGES=/tmp/imagenet-like build/bench/ops/decode_crop_resize_bench
//
// BM_StreamedVsSeparateOps: case 1's map (docs/perf.md) as one streamed op
// (fused = false, mirror, normalize) against the same work as four ops
// (DecodeJpeg, RandomResizedCrop, RandomFlipLeftRight, Normalize), with a
// bare DecodeJpeg of the same images as the reference, all in one run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_images.h"
#include "sluice/ops/decode_crop_resize.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"

namespace sluice::ops {
namespace {

std::string Synthetic(int i) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{375, 500, 3}).value();
  uint8_t* p = t.flat<uint8_t>().data();
  uint32_t s = 77u + static_cast<uint32_t>(i);
  for (int y = 0; y < 375; ++y) {
    for (int x = 0; x < 500; ++x) {
      s = s * 1664525u + 1013904223u;
      const int n = static_cast<int>(s >> 28) - 8;
      const double r = std::hypot(x - 250.0 - i, y - 180.0);
      p[(y * 500 + x) * 3 + 0] =
          static_cast<uint8_t>(std::clamp(128 + 90 * std::sin(r / (9.0 + i % 7)) + n, 0.0, 255.0));
      p[(y * 500 + x) * 3 + 1] = static_cast<uint8_t>(std::clamp(255.0 * y / 375 + n, 0.0, 255.0));
      p[(y * 500 + x) * 3 + 2] =
          static_cast<uint8_t>(((x / (12 + i % 5) + y / 17) % 2) ? 190 + n : 50 + n);
    }
  }
  return EncodeJpeg(t, {.quality = 90}).value();
}

const std::vector<std::string>& Images() {
  static const std::vector<std::string> images = [] {
    std::vector<std::string> out = BenchImagesFromEnv(256);
    if (out.empty()) {
      for (int i = 0; i < 64; ++i) out.push_back(Synthetic(i));
    }
    return out;
  }();
  return images;
}

// Images() with a restart marker every MCU (pixels unchanged).
const std::vector<std::string>& RestartImages() {
  static const std::vector<std::string> images = [] {
    std::vector<std::string> out;
    for (const std::string& img : Images()) {
      Result<std::string> r = AddJpegRestartMarkers(img, {.interval = 1});
      if (!r.ok()) std::abort();
      out.push_back(*std::move(r));
    }
    return out;
  }();
  return images;
}

double RunAll(const std::vector<std::string>& images, bool fused, uint64_t seed) {
  DecodeCropResizeOptions o{.size = {224, 224}, .fused = fused};
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t i = 0;
  for (const std::string& img : images) {
    Rng rng(seed, i++);
    Result<Tensor> t = DecodeRandomCropResize(img, rng, o);
    if (!t.ok()) std::abort();
    benchmark::DoNotOptimize(t->raw_data());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Alternates the two paths over the same images and windows; reports both
// rates and their ratio.
void BM_FusedVsUnfused(benchmark::State& state) {
  double fused_s = 0, unfused_s = 0;
  (void)Images();  // loaded or made before anything is timed
  uint64_t seed = 0;
  for (auto _ : state) {
    unfused_s += RunAll(Images(), false, seed);
    fused_s += RunAll(Images(), true, seed);
    ++seed;
  }
  const double n = static_cast<double>(Images().size() * state.iterations());
  state.counters["images"] = static_cast<double>(Images().size());
  state.counters["fused_images_per_s"] = n / fused_s;
  state.counters["unfused_images_per_s"] = n / unfused_s;
  state.counters["speedup"] = unfused_s / fused_s;
}
BENCHMARK(BM_FusedVsUnfused)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

constexpr float kMean[3] = {123.675f, 116.28f, 103.53f};
constexpr float kStd[3] = {58.395f, 57.12f, 57.375f};

// 0: DecodeJpeg only; 1: the four separate ops; 2: the streamed op.
double RunCase1(int how, uint64_t seed) {
  const DecodeCropResizeOptions o{.size = {224, 224},
                                  .fused = false,
                                  .mirror = Mirror::kRandom,
                                  .mean = {kMean[0], kMean[1], kMean[2]},
                                  .stddev = {kStd[0], kStd[1], kStd[2]}};
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t i = 0;
  for (const std::string& img : Images()) {
    Rng rng(seed, i++);
    Result<Tensor> t =
        how == 2 ? DecodeRandomCropResize(img, rng, o) : DecodeJpeg(img, {.channels = 3});
    if (t.ok() && how == 1) {
      t = RandomResizedCrop(*t, {224, 224}, rng);
      if (t.ok()) t = RandomFlipLeftRight(*std::move(t), rng);
      if (t.ok()) t = Normalize(*std::move(t), kMean, kStd);
    }
    if (!t.ok()) std::abort();
    benchmark::DoNotOptimize(t->raw_data());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_StreamedVsSeparateOps(benchmark::State& state) {
  double s[3] = {0, 0, 0};
  (void)Images();
  uint64_t seed = 0;
  for (auto _ : state) {
    for (int how : {0, 1, 2}) s[how] += RunCase1(how, seed);
    ++seed;
  }
  const double n = static_cast<double>(Images().size() * state.iterations());
  state.counters["decode_us"] = s[0] / n * 1e6;
  state.counters["separate_us"] = s[1] / n * 1e6;
  state.counters["streamed_us"] = s[2] / n * 1e6;
  state.counters["speedup"] = s[1] / s[2];
  state.counters["streamed_of_decode"] = s[0] / s[2];  // the op's ceiling vs bare decode
}
BENCHMARK(BM_StreamedVsSeparateOps)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

// The fused path on the restart-marked images against the unfused path on
// the same files and on the originals (what a user gets without the
// markers: full decodes of restart-marked files are a few % slower), all
// alternating over the same windows.
void BM_FusedWithRestarts(benchmark::State& state) {
  double fused_s = 0, unfused_s = 0, original_s = 0;
  (void)RestartImages();
  uint64_t seed = 0;
  for (auto _ : state) {
    original_s += RunAll(Images(), false, seed);
    unfused_s += RunAll(RestartImages(), false, seed);
    fused_s += RunAll(RestartImages(), true, seed);
    ++seed;
  }
  size_t original_bytes = 0, restart_bytes = 0;
  for (size_t i = 0; i < Images().size(); ++i) {
    original_bytes += Images()[i].size();
    restart_bytes += RestartImages()[i].size();
  }
  const double n = static_cast<double>(Images().size() * state.iterations());
  state.counters["images"] = static_cast<double>(Images().size());
  state.counters["size_ratio"] =
      static_cast<double>(restart_bytes) / static_cast<double>(original_bytes);
  state.counters["fused_images_per_s"] = n / fused_s;
  state.counters["unfused_images_per_s"] = n / unfused_s;
  state.counters["unfused_original_per_s"] = n / original_s;
  state.counters["speedup"] = unfused_s / fused_s;
  state.counters["speedup_vs_original"] = original_s / fused_s;
}
BENCHMARK(BM_FusedWithRestarts)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

}  // namespace
}  // namespace sluice::ops

BENCHMARK_MAIN();
