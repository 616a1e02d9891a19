// The cats_vs_dogs input pipeline of the tutorials, in C++: file names and
// labels from a folder with one subfolder per class, then read, decode,
// resize to 256x256 / 255, shuffle, batch and prefetch, with AUTOTUNE.
//
//   build/samples/image_folder_pipeline DIR [--batch 32]
//   build/samples/image_folder_pipeline --make-demo DIR   # a small folder to try it on
//
// DIR is listed with sluice::ScanImageFolder (sluice/pipeline/image_folder.h),
// as `sluice convert images` lists it: images
// at any depth below a class folder count; .txt files, hidden files and
// files directly in DIR are ignored, as convert ignores them. An image that
// does not decode (a .gif, a corrupt JPEG) stops the run with its name;
// convert skips and lists such files instead.
//
// Python, for comparison:
//   dataset = tf.data.Dataset.from_tensor_slices((filenames, labels))
//   dataset = dataset.map(_decode_and_resize).shuffle(23000).batch(32)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "command_line.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/read_file.h"
#include "sluice/ops/resize.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/image_folder.h"

namespace fs = std::filesystem;
using sluice::Element;
using sluice::Result;
using sluice::Tensor;

// Two classes of 12 small JPEGs: bright circles ("cats") and dark stripes ("dogs").
int MakeDemo(const fs::path& dir) {
  for (int c = 0; c < 2; ++c) {
    fs::create_directories(dir / (c ? "dogs" : "cats"));
    for (int i = 0; i < 12; ++i) {
      const int h = 120 + 7 * i, w = 160 - 3 * i;
      Tensor img = Tensor::Allocate(sluice::DType::kUInt8, sluice::Shape{h, w, 3}).value();
      uint8_t* p = img.flat<uint8_t>().data();
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          const bool on =
              c ? ((x + y + i) / 9) % 2 == 0 : std::hypot(x - w / 2.0, y - h / 2.0) < h / 3.0;
          for (int k = 0; k < 3; ++k)
            p[(y * w + x) * 3 + k] = static_cast<uint8_t>(on ? 220 - 40 * c : 30 + 20 * k);
        }
      }
      const std::string jpeg = sluice::ops::EncodeJpeg(img, {.quality = 90}).value();
      std::ofstream(dir / (c ? "dogs" : "cats") / ("img" + std::to_string(i) + ".jpg"),
                    std::ios::binary)
          << jpeg;
    }
  }
  std::printf("wrote 24 JPEGs in 2 class folders under %s\n", dir.c_str());
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{
      "The cats_vs_dogs input pipeline: the images of DIR (one subfolder per class, listed as "
      "`sluice convert images` lists it) read, decoded, resized to 256x256, shuffled, batched "
      "and prefetched."};
  std::string dir, demo;
  int64_t batch = 32;
  app.add_option("DIR", dir, "Folder with one subfolder of images per class");
  app.add_option("--batch", batch, "Batch size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--make-demo", demo,
                 "Write 24 small JPEGs in 2 class folders into this folder, then stop");
  if (std::optional<int> status = samples::ParseCommandLine(app, argc, argv)) return *status;
  if (!demo.empty()) return MakeDemo(demo);
  if (dir.empty()) {
    std::fprintf(stderr, "image_folder_pipeline: give DIR, or --make-demo DIR\n\n%s",
                 app.help().c_str());
    return 2;
  }

  // One subfolder per class; labels in sorted order of the class names.
  Result<sluice::ImageFolder> listing = sluice::ScanImageFolder(dir);
  if (!listing.ok()) {
    std::fprintf(stderr, "image_folder_pipeline: %s\n", listing.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> files;
  std::vector<int32_t> labels;
  for (const sluice::ImageFile& f : listing->files) {
    files.push_back(listing->root + "/" + f.relative);
    labels.push_back(static_cast<int32_t>(f.label));
  }
  std::printf("found %zu images in %zu classes under %s\n", files.size(), listing->classes.size(),
              dir.c_str());
  if (!listing->ignored.empty()) {
    std::printf(
        "ignored %zu files without an image extension or outside a class folder "
        "(e.g. %s)\n",
        listing->ignored.size(), listing->ignored.front().c_str());
  }
  if (files.empty()) {
    std::fprintf(stderr,
                 "image_folder_pipeline: no images found; expected %s/<class>/<image>.jpg\n",
                 dir.c_str());
    return 1;
  }

  auto decode_and_resize = [](Element e) -> Result<Element> {
    const std::string path(e[0].scalar<std::string_view>());
    SLUICE_ASSIGN_OR_RETURN(Tensor bytes, sluice::ops::ReadFile(path));
    SLUICE_ASSIGN_OR_RETURN(Tensor image, sluice::ops::DecodeImage(bytes.scalar<std::string_view>(),
                                                                   {.channels = 3, .name = path}));
    SLUICE_ASSIGN_OR_RETURN(Tensor resized, sluice::ops::Resize(image, {256, 256}));
    for (float& v : resized.flat<float>()) v /= 255.0f;
    return Element({resized, e[1]}, {"image", "label"});
  };
  auto dataset =
      sluice::Dataset::from_tensor_slices(
          {Tensor::FromStrings(files).value(), Tensor::FromVector<int32_t>(labels).value()},
          {"filename", "label"})
          .map(decode_and_resize, {.parallelism = sluice::kAutotune, .name = "decode_and_resize"})
          .shuffle(23000, {.seed = 1})
          .batch(batch)
          .prefetch(sluice::kAutotune);
  auto it = dataset.iterator();
  if (!it.ok()) {
    std::fprintf(stderr, "%s\n", it.status().ToString().c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  int64_t images = 0;
  for (;;) {
    Result<std::optional<Element>> b = it->next();
    if (!b.ok()) {
      std::fprintf(stderr, "%s\n", b.status().ToString().c_str());
      return 1;
    }
    if (!b->has_value()) break;
    const Tensor& img = *(*b)->find("image");
    images += img.shape().dim(0);
    std::printf("batch: image %s, label %s\n", img.shape().ToString().c_str(),
                (*b)->find("label")->shape().ToString().c_str());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%lld images in %zu classes, %.0f images/s\n%s", static_cast<long long>(images),
              listing->classes.size(), images / s, it->stats().ToString().c_str());
  return 0;
}
