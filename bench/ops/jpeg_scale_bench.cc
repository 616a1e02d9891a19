// Does decoding at a DCT scale of M/8 pay? libjpeg-turbo 2.1 scales by any
// M/8 (M = 1..16), and a fused random-crop decode could pick the smallest M
// that keeps the window at least the output size (a 300x300 window at 6/8
// is 225x225). This decodes whole images with tjDecompress2 at each M/8 and
// reports the time against the 8/8 decode of the same images, alternating
// in the same run ("ratio" < 1: the scaled decode is faster).
//
// Images: the JPEGs under $SLUICE_BENCH_IMAGES (at most 64), else 16
// photo-like 500x375 quality-90 images made here.
//
//   SLUICE_BENCH_IMAGES=/tmp/sluice-imagenet-like build/bench/ops/jpeg_scale_bench
#include <turbojpeg.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_images.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops {
namespace {

std::string Synthetic(int i) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{375, 500, 3}).value();
  uint8_t* p = t.flat<uint8_t>().data();
  for (int y = 0; y < 375; ++y) {
    for (int x = 0; x < 500; ++x) {
      const double r = std::hypot(x - 250.0 - i, y - 180.0);
      p[(y * 500 + x) * 3 + 0] = static_cast<uint8_t>(128 + 90 * std::sin(r / (9.0 + i)));
      p[(y * 500 + x) * 3 + 1] = static_cast<uint8_t>(255 * y / 375);
      p[(y * 500 + x) * 3 + 2] = static_cast<uint8_t>(((x / 12 + y / 17) % 2) ? 190 : 50);
    }
  }
  return EncodeJpeg(t, {.quality = 90}).value();
}

const std::vector<std::string>& Images() {
  static const std::vector<std::string> images = [] {
    std::vector<std::string> out = BenchImagesFromEnv(64);
    if (out.empty()) {
      for (int i = 0; i < 16; ++i) out.push_back(Synthetic(i));
    }
    return out;
  }();
  return images;
}

// Decodes every image at scale m/8 (RGB, fast integer DCT as TF's default);
// returns the seconds taken.
double DecodeAll(tjhandle handle, int m, std::vector<unsigned char>* buf) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& jpeg : Images()) {
    const auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
    int w = 0, h = 0, sub = 0, cs = 0;
    if (tjDecompressHeader3(handle, data, jpeg.size(), &w, &h, &sub, &cs) != 0) std::abort();
    const tjscalingfactor f{m, 8};
    const int sw = TJSCALED(w, f), sh = TJSCALED(h, f);
    buf->resize(static_cast<size_t>(sw) * sh * 3);
    if (tjDecompress2(handle, data, jpeg.size(), buf->data(), sw, 0, sh, TJPF_RGB,
                      TJFLAG_FASTDCT) != 0) {
      std::abort();
    }
    benchmark::DoNotOptimize(buf->data());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_DecodeAtScale(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0));
  (void)Images();  // loaded or made before anything is timed
  tjhandle handle = tjInitDecompress();
  std::vector<unsigned char> buf;
  double scaled_s = 0, full_s = 0;
  for (auto _ : state) {
    full_s += DecodeAll(handle, 8, &buf);
    scaled_s += DecodeAll(handle, m, &buf);
  }
  tjDestroy(handle);
  const double n = static_cast<double>(Images().size() * state.iterations());
  state.counters["us_per_image"] = 1e6 * scaled_s / n;
  state.counters["us_per_image_8_8"] = 1e6 * full_s / n;
  state.counters["ratio"] = scaled_s / full_s;
}
BENCHMARK(BM_DecodeAtScale)->DenseRange(1, 8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sluice::ops

BENCHMARK_MAIN();
