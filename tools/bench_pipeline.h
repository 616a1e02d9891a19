// BenchPipeline: the pipelines `sluice bench` measures, described by flags or
// by a small JSON spec file, and built into a Dataset.
//
//   {"source": {"tfrecord": "data/train-*.tfrecord"},
//    "parallelism": "autotune", "cores": 4, "map_and_batch_fusion": true,
//    "fold_ops": true,
//    "stages": [{"shuffle": 1000}, {"map": "decode"}, {"resize": [224, 224]},
//               {"flip": true}, {"normalize": true}, {"batch": 128},
//               {"prefetch": "autotune"}]}
//
// Sources: "tfrecord" (files of the common image schema of `sluice convert`:
// parsed into (image bytes, label) by a "parse" stage), "images" (a
// class-per-folder tree: a "read" stage reads each file), "records" (raw
// records, read and checksummed, nothing else). Image stages (decode, fused,
// crop, resize, flip, normalize) each become one map stage; a list
// {"map": ["decode", {"resize": [224, 224]}]} becomes one map running them
// in turn. Sizes are [width, height], as WxH on the command line.
//
// Values; no shared state.
#ifndef SLUICE_TOOLS_BENCH_PIPELINE_H_
#define SLUICE_TOOLS_BENCH_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::tools {

enum class BenchSourceKind { kTFRecord, kImages, kRecords };

// One per-image operation of a map stage.
struct BenchImageOp {
  enum Kind { kDecode, kFused, kCrop, kResize, kFlip, kNormalize } kind = kDecode;
  int64_t width = 0, height = 0;  // fused, crop, resize
};

struct BenchStage {
  enum Kind { kMap, kShuffle, kBatch, kPrefetch } kind = kMap;
  std::vector<BenchImageOp> ops;  // kMap
  int64_t n = 0;                  // shuffle buffer, batch size, prefetch (kAutotune ok)
  int64_t parallelism = 0;        // kMap; 0: the pipeline's
};

struct BenchPipelineSpec {
  BenchSourceKind source = BenchSourceKind::kTFRecord;
  std::string path;  // glob (tfrecord, records) or folder (images)
  std::vector<BenchStage> stages;
  int64_t parallelism = kAutotune;  // of parse/read and map stages
  int cores = 0;                    // cpu_budget; 0: the default
  uint64_t seed = 1;
  bool map_and_batch_fusion = true;  // Options::map_and_batch_fusion
  // Image ops on encoded bytes go through one decode-crop-resize op where
  // the list allows (`fused`, or "decode? crop? resize", with a flip and a
  // normalize right after): the same bytes. false: each op on its own.
  bool fold_ops = true;
};

// "N" (>= min) or "autotune" -> kAutotune; false if malformed.
bool ParseCountOrAutotune(std::string_view s, int64_t min, int64_t* out);

// Reads a JSON spec file. NotFound / InvalidArgument naming the file and
// the offending key.
Result<BenchPipelineSpec> ReadBenchSpec(const std::string& path);

// The Dataset for `spec` (files listed now, TFRecord files only, as
// MatchRecordFiles in record_files.h: an error if none is usable), and
// "tfrecord(3 files) -> parse -> decode+resize -> batch(128) -> prefetch".
Result<Dataset> BuildBenchPipeline(const BenchPipelineSpec& spec);
std::string DescribeBenchPipeline(const BenchPipelineSpec& spec);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_BENCH_PIPELINE_H_
