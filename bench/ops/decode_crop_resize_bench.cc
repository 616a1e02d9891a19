// The fused decode + random crop + resize path against the unfused one
// (decode the whole image, crop, resize) on the same images and windows,
// measured in the same run (target: fused >= 1.8x at 224x224 output).
//
// Images: the JPEGs under $SLUICE_BENCH_IMAGES (e.g. the ImageNet-like set
// of scripts/make-imagenet-like.sh), at most 256 of them; unset, 64
// photo-like 500x375 quality-90 images made here.
//
//   SLUICE_BENCH_IMAGES=/tmp/imagenet-like build/bench/ops/decode_crop_resize_bench
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_images.h"
#include "sluice/ops/decode_crop_resize.h"

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

double RunAll(bool fused, uint64_t seed) {
  DecodeCropResizeOptions o{.size = {224, 224}, .fused = fused};
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t i = 0;
  for (const std::string& img : Images()) {
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
    unfused_s += RunAll(false, seed);
    fused_s += RunAll(true, seed);
    ++seed;
  }
  const double n = static_cast<double>(Images().size() * state.iterations());
  state.counters["images"] = static_cast<double>(Images().size());
  state.counters["fused_images_per_s"] = n / fused_s;
  state.counters["unfused_images_per_s"] = n / unfused_s;
  state.counters["speedup"] = unfused_s / fused_s;
}
BENCHMARK(BM_FusedVsUnfused)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace
}  // namespace sluice::ops

BENCHMARK_MAIN();
