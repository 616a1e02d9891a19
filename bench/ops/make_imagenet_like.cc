// make_imagenet_like: builds an ImageNet-like folder of JPEGs for the
// `sluice convert` benchmark (scripts/bench-convert.sh), deterministically
// from a seed, out of real photographs (Debian's mate-backgrounds).
//
//   make_imagenet_like --out DIR [--count 5000] [--classes 10] [--width 500]
//                      [--height 375] [--quality 90] [--seed 1] [--threads N]
//                      [--source /usr/share/backgrounds/mate]
//
// Writes DIR/<class>/<class>_<index>.JPEG, ImageNet's layout and naming
// (class folders like n01009990). Image i is made from Rng(seed, i) alone: a
// source photo (each class draws from its own share of the photos), a
// random window of 25% to 100% of it with the output's aspect ratio, resized
// with ops::Resize (bilinear, antialias), flipped with probability 1/2, and
// encoded by ops::EncodeJpeg at --quality. Sizes vary as ImageNet's do: a
// fifth are portrait, and each side is jittered by up to -10%. The same
// arguments give the same bytes whatever --threads is.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/args.h"
#include "sluice/core/rng.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/read_file.h"
#include "sluice/ops/resize.h"

namespace {

namespace fs = std::filesystem;
using sluice::Rng;
using sluice::Tensor;
namespace ops = sluice::ops;

struct Args {
  std::string out;
  std::string source = "/usr/share/backgrounds/mate";
  int count = 5000;
  int classes = 10;
  int width = 500;
  int height = 375;
  int quality = 90;
  uint64_t seed = 1;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

[[noreturn]] void Die(const std::string& msg) {
  fmt::print(stderr, "make_imagenet_like: {}\n", msg);
  std::exit(1);
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  sluice::bench::CommandLine args(
      "make_imagenet_like",
      "--out DIR [--count 5000] [--classes 10] [--width 500] [--height 375]\n"
      "      [--quality 90] [--seed 1] [--threads N] [--source DIR]");
  args.Add("--out", &a.out)
      .Add("--source", &a.source)
      .Add("--count", &a.count, 1, 100'000'000)
      .Add("--classes", &a.classes, 1, 100'000)
      .Add("--width", &a.width, 16, 8192)
      .Add("--height", &a.height, 16, 8192)
      .Add("--quality", &a.quality, 1, 100)
      .Add("--seed", &a.seed, 0, 2'000'000'000)
      .Add("--threads", &a.threads, 1, 1024)
      .Parse(argc, argv);
  if (a.out.empty()) args.UsageError("--out DIR is required");
  return a;
}

// The source photographs, decoded at the smallest DCT scale that keeps
// them at least 2048x1024 (sorted by path, so the list is stable).
std::vector<Tensor> LoadSources(const std::string& dir) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string ext = it->path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (it->is_regular_file() && (ext == ".jpg" || ext == ".jpeg")) paths.push_back(it->path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Tensor> images;
  for (const fs::path& p : paths) {
    auto file = ops::ReadFile(p.string());
    if (!file.ok()) Die(file.status().ToString());
    ops::DecodeJpegOptions o;
    o.channels = 3;
    // Full resolution, but none wider than 4096 (the 5640-pixel one at 1/2).
    o.min_width = 2048;
    o.min_height = 1024;
    auto image = ops::DecodeJpeg(file->scalar<std::string_view>(), o);
    if (!image.ok()) Die(p.string() + ": " + image.status().ToString());
    images.push_back(std::move(*image));
  }
  if (images.empty()) {
    Die("no JPEG photographs under " + dir + " (apt-get install mate-backgrounds)");
  }
  return images;
}

std::string ClassName(int c) { return fmt::format("n{:08d}", 1'000'000 + c * 10'007); }

// float pixels to uint8, rounding half to even and clamping.
Tensor ToUint8(const Tensor& f) {
  Tensor out = Tensor::Allocate(sluice::DType::kUInt8, f.shape()).value();
  auto in = f.flat<float>();
  auto o = out.flat<uint8_t>();
  for (size_t i = 0; i < in.size(); ++i) {
    const float r = std::nearbyint(in[i]);
    o[i] = !(r > 0.0f) ? 0 : r >= 255.0f ? 255 : static_cast<uint8_t>(r);
  }
  return out;
}

std::string MakeImage(const Args& a, const std::vector<Tensor>& sources, int i) {
  Rng rng(a.seed, static_cast<uint64_t>(i));
  const int cls = i % a.classes;
  // Each class draws from its own share of the photos (so classes look
  // different): photos s with s % classes == c, or photo c % photos when
  // there are fewer photos than classes.
  std::vector<size_t> pool;
  const size_t classes = static_cast<size_t>(a.classes), c = static_cast<size_t>(cls);
  if (sources.size() >= classes) {
    for (size_t s = c; s < sources.size(); s += classes) pool.push_back(s);
  } else {
    pool.push_back(c % sources.size());
  }
  const Tensor& src = sources[pool[rng.UniformInt(pool.size())]];
  const bool portrait = rng.UniformFloat() < 0.2f;
  int64_t w = portrait ? a.height : a.width, h = portrait ? a.width : a.height;
  w = std::max<int64_t>(8, std::llround(w * rng.Uniform(0.9f, 1.0f)));
  h = std::max<int64_t>(8, std::llround(h * rng.Uniform(0.9f, 1.0f)));
  const int64_t sh = src.shape().dim(0), sw = src.shape().dim(1);
  // A window of 25%..100% of the photo's area with the output's aspect ratio.
  const double area = sh * sw * rng.Uniform(0.25f, 1.0f);
  int64_t cw = std::llround(std::sqrt(area * w / h)), ch = std::llround(std::sqrt(area * h / w));
  cw = std::clamp<int64_t>(cw, 1, sw);
  ch = std::clamp<int64_t>(ch, 1, sh);
  const int64_t y = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(sh - ch + 1)));
  const int64_t x = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(sw - cw + 1)));
  Tensor crop = ops::Crop(src, y, x, ch, cw).value();
  ops::ResizeOptions r;
  r.antialias = true;
  Tensor pixels = ToUint8(ops::Resize(crop, ops::ImageSize{h, w}, r).value());
  if (rng.UniformFloat() < 0.5f) pixels = ops::FlipLeftRight(pixels).value();
  ops::EncodeJpegOptions e;
  e.quality = a.quality;
  return ops::EncodeJpeg(pixels, e).value();
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = ParseArgs(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Tensor> sources = LoadSources(a.source);
  for (int c = 0; c < a.classes; ++c) fs::create_directories(fs::path(a.out) / ClassName(c));
  std::atomic<int> next{0};
  std::atomic<uint64_t> bytes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < a.threads; ++t) {
    threads.emplace_back([&] {
      for (int i; (i = next++) < a.count;) {
        const std::string jpeg = MakeImage(a, sources, i);
        const std::string cls = ClassName(i % a.classes);
        const fs::path path = fs::path(a.out) / cls / fmt::format("{}_{:06d}.JPEG", cls, i);
        std::ofstream f(path, std::ios::binary);
        f.write(jpeg.data(), static_cast<std::streamsize>(jpeg.size()));
        if (!f) Die("cannot write " + path.string());
        bytes += jpeg.size();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("wrote {} JPEGs ({:.1f} MB, {} classes, {} sources) to {} in {:.1f} s\n", a.count,
             bytes / 1e6, a.classes, sources.size(), a.out, secs);
  return 0;
}
