// JPEG decode speed against the same-run reference: a bare tjDecompress2()
// call (TurboJPEG, one reused handle) on the same bytes with the same DCT
// method, output format and scale. The image is a deterministic 500x375
// photo-like picture (smooth shading, edges and sensor-like noise) encoded
// by EncodeJpeg at quality 90, 4:2:0.
//
// BM_*VsTurboJpeg time ours and the reference alternately in one loop and
// report counter `ratio` = our time / reference time (target: <= 1.03).
// BM_DecodeAndCropJpeg reports `vs_full` = crop time / full decode time.
// BM_AddJpegRestartMarkers reports `size` = output bytes / input bytes.
#include <benchmark/benchmark.h>
#include <turbojpeg.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"

namespace sluice::ops {
namespace {

constexpr int kWidth = 500;
constexpr int kHeight = 375;

const std::string& Photo() {
  static const std::string* jpeg = [] {
    Tensor image = Tensor::Allocate(DType::kUInt8, Shape{kHeight, kWidth, 3}).value();
    auto px = image.flat<uint8_t>();
    Rng rng(2024);
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        // Sky-to-ground shading, a few hard-edged shapes, and noise.
        const double sky = 0.5 + 0.5 * std::cos(y * 0.012) * std::sin(x * 0.007 + 1.3);
        const bool disc = (x - 320) * (x - 320) + (y - 150) * (y - 150) < 70 * 70;
        const bool band = (x + 2 * y) % 97 < 9;
        for (int c = 0; c < 3; ++c) {
          double v = 40 + 170 * sky * (c == 2 ? 1.0 : 0.6 + 0.2 * c);
          if (disc) v = 220 - 60 * c;
          if (band) v *= 0.5;
          v += rng.Normal() * 6;
          px[(y * kWidth + x) * 3 + c] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
        }
      }
    }
    EncodeJpegOptions o;
    o.quality = 90;
    return new std::string(EncodeJpeg(image, o).value());
  }();
  return *jpeg;
}

struct TurboJpeg {
  tjhandle handle = tjInitDecompress();
  ~TurboJpeg() { tjDestroy(handle); }
  // The reference: decode `jpeg` into `out` (RGB), scaled by 1/ratio.
  void Decode(const std::string& jpeg, int ratio, bool accurate, std::vector<uint8_t>* out) {
    const int w = (kWidth + ratio - 1) / ratio, h = (kHeight + ratio - 1) / ratio;
    out->resize(static_cast<size_t>(w) * h * 3);
    const int flags = accurate ? TJFLAG_ACCURATEDCT : TJFLAG_FASTDCT;
    if (tjDecompress2(handle, reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(),
                      out->data(), w, 0, h, TJPF_RGB, flags) != 0) {
      std::abort();
    }
  }
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Ours and the reference, alternately, on the same bytes.
void VsTurboJpeg(benchmark::State& state, int ratio, bool accurate) {
  const std::string& jpeg = Photo();
  TurboJpeg tj;
  std::vector<uint8_t> ref;
  DecodeJpegOptions o;
  o.ratio = ratio;
  o.dct_method = accurate ? JpegDctMethod::kIntegerAccurate : JpegDctMethod::kIntegerFast;
  Tensor out = Tensor::Allocate(DType::kUInt8, JpegOutputShape(jpeg, o).value()).value();
  double ours = 0, theirs = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    tj.Decode(jpeg, ratio, accurate, &ref);
    theirs += Seconds(t0);
    t0 = std::chrono::steady_clock::now();
    if (!DecodeJpegInto(jpeg, o, &out).ok()) std::abort();
    ours += Seconds(t0);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.counters["ours_us"] = 1e6 * ours / state.iterations();
  state.counters["turbojpeg_us"] = 1e6 * theirs / state.iterations();
  state.counters["ratio"] = ours / theirs;
  state.SetLabel(std::to_string(jpeg.size()) + "-byte 500x375 4:2:0 q90");
}

void BM_DecodeJpegVsTurboJpeg(benchmark::State& state) { VsTurboJpeg(state, 1, false); }
void BM_DecodeJpegAccurateVsTurboJpeg(benchmark::State& state) { VsTurboJpeg(state, 1, true); }
void BM_DecodeJpegScaledVsTurboJpeg(benchmark::State& state) {
  VsTurboJpeg(state, static_cast<int>(state.range(0)), false);
}

// Plain timings, allocation of the output included.
void BM_TurboJpegDecompress2(benchmark::State& state) {
  const std::string& jpeg = Photo();
  TurboJpeg tj;
  std::vector<uint8_t> ref;
  for (auto _ : state) {
    tj.Decode(jpeg, 1, false, &ref);
    benchmark::DoNotOptimize(ref.data());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_DecodeJpeg(benchmark::State& state) {
  const std::string& jpeg = Photo();
  for (auto _ : state) {
    Result<Tensor> t = DecodeJpeg(jpeg);
    if (!t.ok()) std::abort();
    benchmark::DoNotOptimize(t->raw_data());
  }
  state.SetItemsProcessed(state.iterations());
}

// A centered 224x224 window against the full decode, alternately.
void BM_DecodeAndCropJpeg(benchmark::State& state) {
  const std::string& jpeg = Photo();
  const JpegCropWindow window{(kHeight - 224) / 2, (kWidth - 224) / 2, 224, 224};
  Tensor full = Tensor::Allocate(DType::kUInt8, Shape{kHeight, kWidth, 3}).value();
  Tensor crop = Tensor::Allocate(DType::kUInt8, Shape{224, 224, 3}).value();
  double crop_s = 0, full_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    if (!DecodeJpegInto(jpeg, {}, &full).ok()) std::abort();
    full_s += Seconds(t0);
    t0 = std::chrono::steady_clock::now();
    if (!DecodeAndCropJpegInto(jpeg, window, {}, &crop).ok()) std::abort();
    crop_s += Seconds(t0);
    benchmark::DoNotOptimize(crop.raw_data());
  }
  state.counters["crop_us"] = 1e6 * crop_s / state.iterations();
  state.counters["full_us"] = 1e6 * full_s / state.iterations();
  state.counters["vs_full"] = crop_s / full_s;
}

void BM_EncodeJpeg(benchmark::State& state) {
  DecodeJpegOptions d;
  const Tensor image = DecodeJpeg(Photo(), d).value();
  for (auto _ : state) {
    Result<std::string> jpeg = EncodeJpeg(image);
    if (!jpeg.ok()) std::abort();
    benchmark::DoNotOptimize(jpeg->data());
  }
  state.SetItemsProcessed(state.iterations());
}

// The lossless restart-marker transcode of the photo. Args: the wanted
// interval (0: one MCU row, 32 MCUs at 4:2:0) and optimize_huffman.
void BM_AddJpegRestartMarkers(benchmark::State& state) {
  const std::string& jpeg = Photo();
  JpegRestartOptions o;
  o.interval = state.range(0) > 0 ? static_cast<int>(state.range(0)) : (kWidth + 15) / 16;
  o.optimize_huffman = state.range(1) != 0;
  size_t size = 0;
  for (auto _ : state) {
    Result<std::string> out = AddJpegRestartMarkers(jpeg, o);
    if (!out.ok()) std::abort();
    size = out->size();
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["size"] = static_cast<double>(size) / static_cast<double>(jpeg.size());
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_DecodeJpegVsTurboJpeg);
BENCHMARK(BM_DecodeJpegAccurateVsTurboJpeg);
BENCHMARK(BM_DecodeJpegScaledVsTurboJpeg)->Arg(2)->Arg(4)->Arg(8);
BENCHMARK(BM_TurboJpegDecompress2);
BENCHMARK(BM_DecodeJpeg);
BENCHMARK(BM_DecodeAndCropJpeg);
BENCHMARK(BM_EncodeJpeg);
BENCHMARK(BM_AddJpegRestartMarkers)->ArgsProduct({{1, 2, 4, 0}, {1, 0}});

}  // namespace
}  // namespace sluice::ops

BENCHMARK_MAIN();
