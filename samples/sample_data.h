// Shared by the training samples: finding the `sluice` command line,
// converting Fashion-MNIST to TFRecords when needed, and the image input
// pipeline over TFRecords made by `sluice convert` (the common image
// schema: image/encoded, image/class/label).
#ifndef SLUICE_SAMPLES_SAMPLE_DATA_H_
#define SLUICE_SAMPLES_SAMPLE_DATA_H_

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/ops/decode_image.h"
#include "sluice/ops/resize.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/example_parser.h"

namespace samples {

namespace fs = std::filesystem;

inline constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

// The sluice command line: $SLUICE_CLI, the one built beside the samples,
// or `sluice` on the PATH.
inline std::string SluiceCli() {
  if (const char* env = std::getenv("SLUICE_CLI")) return env;
#ifdef SLUICE_CLI_PATH
  if (fs::exists(SLUICE_CLI_PATH)) return SLUICE_CLI_PATH;
#endif
  return "sluice";
}

// Runs the command line with `args` (already shell-quoted); false on failure.
inline bool RunCli(const std::string& args) {
  std::string cmd = "'" + SluiceCli() + "' " + args;
  std::fprintf(stderr, "+ sluice %s\n", args.c_str());
  return std::system(cmd.c_str()) == 0;
}

inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// DIR/train-*.tfrecord and DIR/test-*.tfrecord from Debian's
// dataset-fashion-mnist, converted once with `sluice convert idx`, with
// .idx indexes (exact sizes, global_shuffle, record-level sharding).
inline sluice::Status EnsureFashionRecords(const std::string& dir) {
  for (const char* split : {"train", "test"}) {
    std::string prefix = dir + "/" + split;
    if (fs::exists(prefix + "-labels.txt")) continue;
    std::string images = std::string(kFashionDir) + "/" +
                         (std::string(split) == "train" ? "train" : "t10k") +
                         "-images-idx3-ubyte.gz";
    std::string labels = images;
    labels.replace(labels.find("images-idx3"), 11, "labels-idx1");
    if (!fs::exists(images)) {
      return sluice::Status::NotFound(images +
                                      " not found: install Debian's dataset-fashion-mnist "
                                      "(scripts/install-deps.sh does) or pass --train/--test");
    }
    if (!RunCli("convert idx " + Quote(images) + " " + Quote(labels) + " --fashion --out " +
                Quote(prefix) + " --shards 4 --index")) {
      return sluice::Status::Internal("sluice convert idx failed for " + images);
    }
  }
  return sluice::Status::OK();
}

struct ImagePipelineOptions {
  bool train = true;  // shuffle files and records
  int64_t batch = 32;
  int channels = 0;           // 0: as stored
  int height = 0, width = 0;  // resize to this (0: keep; then all images must match)
  uint64_t seed = 1;
  int64_t shuffle_buffer = 10000;
};

// A record of the common image schema -> (image, label): parse, decode
// (and resize, to float32 as tf.image.resize returns).
inline std::function<sluice::Result<sluice::Element>(sluice::Element)> DecodeImageRecord(
    const ImagePipelineOptions& o) {
  using sluice::Element;
  using sluice::Result;
  using sluice::Tensor;
  sluice::ParseSpec spec = {
      {"image/encoded", sluice::FixedLenFeature(sluice::DType::kString, {})},
      {"image/class/label", sluice::FixedLenFeature(sluice::DType::kInt64, {})}};
  auto parser =
      std::make_shared<sluice::ExampleParser>(sluice::ExampleParser::Create(spec).value());
  return [parser, o](Element e) -> Result<Element> {
    // Parsed without copying: the strings view the record's read buffer.
    SLUICE_ASSIGN_OR_RETURN(Element ex, parser->ParseSingle(e[0]));
    SLUICE_ASSIGN_OR_RETURN(Tensor image, sluice::ops::DecodeImage(ex[0].scalar<std::string_view>(),
                                                                   {.channels = o.channels}));
    if (o.height > 0) {
      SLUICE_ASSIGN_OR_RETURN(image, sluice::ops::Resize(image, {o.height, o.width}));
    }
    Element out({image, ex[1]}, {"image", "label"});
    // distribute(..., {.pad_for_eval = true})'s weights come along.
    if (const Tensor* w = e.find("sample_weight")) out.push_back(*w, "sample_weight");
    return out;
  };
}

// TFRecords of the common image schema -> (image, label) batches: decode
// (and resize) in parallel with AUTOTUNE, shuffle, batch, prefetch. Images
// stay uint8 unless resized (float32 then, as tf.image.resize returns).
inline sluice::Dataset ImagePipeline(const std::string& pattern, const ImagePipelineOptions& o) {
  sluice::Dataset files =
      sluice::Dataset::list_files(pattern, {.shuffle = o.train, .seed = o.seed});
  sluice::Dataset ds = files.interleave(sluice::tfrecords(), {.cycle_length = 4});
  if (o.train) ds = ds.shuffle(o.shuffle_buffer, {.seed = o.seed});
  return ds.map(DecodeImageRecord(o), {.parallelism = sluice::kAutotune, .name = "decode"})
      .batch(o.batch)
      .prefetch(sluice::kAutotune);
}

}  // namespace samples

#endif  // SLUICE_SAMPLES_SAMPLE_DATA_H_
