// `sluice bench`: the real binary on a small generated image folder and its
// TFRecords (made with `sluice convert images`), the JSON it writes, the
// sweep, the spec file and the error messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench_pipeline.h"
#include "sluice/core/rng.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/png.h"
#include "test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::WriteFileOrDie;

struct CliRun {
  int exit_code;
  std::string out;
  std::string err;
};

CliRun Sluice(const ScratchDir& dir, const std::string& args) {
  const std::string cmd = "cd " + dir.file("") + " && " + std::string(SLUICE_BINARY) + " " + args +
                          " > stdout 2> stderr < /dev/null";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFileOrDie(dir.file("stdout")),
          ReadFileOrDie(dir.file("stderr"))};
}

Tensor Pixels(int64_t h, int64_t w, uint64_t seed) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, 3}).value();
  Rng rng(seed);
  for (uint8_t& v : t.flat<uint8_t>()) v = static_cast<uint8_t>(rng.NextU32());
  return t;
}

// 12 images in 2 classes, JPEG and PNG of various sizes, and their TFRecords.
class BenchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 12; ++i) {
      const std::string cls = i % 2 ? "dog" : "cat";
      fs::create_directories(dir_.file("imgs/" + cls));
      const Tensor px = Pixels(20 + i, 24 + 2 * i, i);
      const std::string name = dir_.file("imgs/" + cls + "/" + std::to_string(i));
      if (i % 3 == 0) {
        WriteFileOrDie(name + ".png", ops::EncodePng(px).value());
      } else {
        WriteFileOrDie(name + ".jpg", ops::EncodeJpeg(px).value());
      }
    }
    const CliRun c = Sluice(dir_, "convert images imgs --out recs/train --shards 2");
    ASSERT_EQ(c.exit_code, 0) << c.err;
  }
  ScratchDir dir_;
};

TEST_F(BenchCliTest, TFRecordEpochJson) {
  const CliRun r = Sluice(dir_,
                          "bench --tfrecord 'recs/train-*.tfrecord' --decode --resize 16x16 "
                          "--flip --normalize --batch 5 --epochs 1 --warmup 0 --json out.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("elements/s"), std::string::npos) << r.out;
  const json j = json::parse(ReadFileOrDie(dir_.file("out.json")));
  EXPECT_EQ(j["elements"], 12);
  EXPECT_EQ(j["batches"], 3);  // 5 + 5 + 2
  EXPECT_EQ(j["batched"], true);
  EXPECT_EQ(j["epochs"], 1);
  // float32 16x16x3 images and int64 labels.
  EXPECT_EQ(j["bytes"], 12 * (16 * 16 * 3 * 4 + 8));
  EXPECT_GT(j["elements_per_s"].get<double>(), 0);
  EXPECT_GT(j["peak_rss_bytes"].get<int64_t>(), 0);
  std::vector<std::string> stages;
  for (const json& s : j["stats"]["stages"]) stages.push_back(s["name"]);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "parse"), stages.end());
  EXPECT_NE(std::find(stages.begin(), stages.end(), "decode+resize+flip+normalize"), stages.end());
}

TEST_F(BenchCliTest, ImageFolderFusedAndRecords) {
  CliRun r = Sluice(dir_,
                    "bench --images imgs --fused 8x8 --batch 4 --epochs 2 --warmup 0 --json i.json "
                    "--trace t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(ReadFileOrDie(dir_.file("i.json")));
  EXPECT_EQ(j["elements"], 24);
  EXPECT_EQ(j["batches"], 6);
  EXPECT_TRUE(json::parse(ReadFileOrDie(dir_.file("t.json")))["traceEvents"].is_array());

  r = Sluice(dir_, "bench --records 'recs/*.tfrecord' --epochs 1 --warmup 0 --json r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(ReadFileOrDie(dir_.file("r.json")));
  EXPECT_EQ(j["elements"], 12);
  EXPECT_EQ(j["batched"], false);
}

TEST_F(BenchCliTest, Sweep) {
  const CliRun r = Sluice(dir_,
                          "bench --tfrecord 'recs/*.tfrecord' --decode --resize 8x8 --batch 4 "
                          "--sweep parallelism=1..2 --duration 0.3 --warmup 0.05 --json s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("AUTOTUNE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("closest"), std::string::npos) << r.out;
  const json j = json::parse(ReadFileOrDie(dir_.file("s.json")));
  ASSERT_EQ(j["points"].size(), 3u);
  EXPECT_EQ(j["points"][0]["parallelism"], 1);
  EXPECT_EQ(j["points"][1]["parallelism"], 2);
  EXPECT_EQ(j["points"][2]["autotune"], true);
  for (const json& p : j["points"]) EXPECT_GT(p["report"]["elements"].get<int64_t>(), 0);
  EXPECT_GE(j["closest_fixed"].get<int>(), 1);
}

// A fused op followed by flip and normalize (in either order) has them done
// inside the op, writing into the batch row: the same bytes as running
// them as separate ops (a same-size resize in between stops the folding).
// The batches' image bytes of one map stage running `ops` over the test's
// records, then batch(4); `fold` as BenchPipelineSpec::fold_ops.
std::vector<std::string> RunOps(const std::string& files, std::vector<tools::BenchImageOp> ops,
                                bool fold = true) {
  tools::BenchPipelineSpec spec;
  spec.path = files;
  spec.parallelism = 2;
  spec.seed = 7;
  spec.fold_ops = fold;
  spec.stages = {tools::BenchStage{.kind = tools::BenchStage::kMap, .ops = std::move(ops)},
                 tools::BenchStage{.kind = tools::BenchStage::kBatch, .n = 4}};
  std::vector<std::string> out;
  Result<Dataset> ds = tools::BuildBenchPipeline(spec);
  EXPECT_TRUE(ds.ok()) << ds.status().ToString();
  if (!ds.ok()) return out;
  Iterator it = ds->iterator().value();
  for (;;) {
    Result<std::optional<Element>> e = it.next();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !*e) break;
    const Tensor& images = (**e)[0];
    out.emplace_back(static_cast<const char*>(images.raw_data()), images.byte_size());
  }
  return out;
}

TEST_F(BenchCliTest, FusedFoldsFlipAndNormalizeWithTheSameBytes) {
  using tools::BenchImageOp;
  const std::string files = dir_.file("recs/*.tfrecord");
  const BenchImageOp fused{.kind = BenchImageOp::kFused, .width = 16, .height = 12};
  const BenchImageOp flip{.kind = BenchImageOp::kFlip};
  const BenchImageOp norm{.kind = BenchImageOp::kNormalize};
  const std::vector<std::string> separate = RunOps(files, {fused, flip, norm}, /*fold=*/false);
  ASSERT_EQ(separate.size(), 3u);
  EXPECT_EQ(separate[0].size(), 4u * 12 * 16 * 3 * sizeof(float));
  EXPECT_EQ(RunOps(files, {fused, flip, norm}), separate);
  EXPECT_EQ(RunOps(files, {fused, norm, flip}), separate);
  EXPECT_NE(RunOps(files, {fused, norm}), separate);  // the flip did something
}

// "decode? crop? resize" on encoded bytes, and a flip and a normalize after
// it, run as one DecodeCropResize (every row decoded, the crop drawn as
// RandomCrop draws it): the bytes of the separate ops, for JPEG and PNG,
// shrinking, enlarging and keeping the size.
TEST_F(BenchCliTest, DecodeCropResizeFoldsWithTheSameBytes) {
  using tools::BenchImageOp;
  const std::string files = dir_.file("recs/*.tfrecord");
  const BenchImageOp decode{.kind = BenchImageOp::kDecode};
  const BenchImageOp flip{.kind = BenchImageOp::kFlip};
  const BenchImageOp norm{.kind = BenchImageOp::kNormalize};
  const BenchImageOp crop{.kind = BenchImageOp::kCrop, .width = 20, .height = 18};
  for (const auto& [w, h] : {std::pair{16, 12}, std::pair{31, 27}, std::pair{20, 18}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const BenchImageOp resize{.kind = BenchImageOp::kResize, .width = w, .height = h};
    const std::vector<std::string> cropped =
        RunOps(files, {decode, crop, resize, flip, norm}, /*fold=*/false);
    ASSERT_EQ(cropped.size(), 3u);
    EXPECT_EQ(cropped[0].size(), 4u * h * w * 3 * sizeof(float));
    EXPECT_EQ(RunOps(files, {decode, crop, resize, flip, norm}), cropped);
    EXPECT_EQ(RunOps(files, {crop, resize, norm, flip}), cropped);
    const std::vector<std::string> whole = RunOps(files, {decode, resize, flip}, /*fold=*/false);
    EXPECT_EQ(RunOps(files, {decode, resize, flip}), whole);
    EXPECT_EQ(RunOps(files, {resize, flip}), whole);
    EXPECT_NE(whole, RunOps(files, {resize}));  // the flip did something
  }
}

TEST_F(BenchCliTest, SpecFile) {
  WriteFileOrDie(dir_.file("spec.json"), R"({
    "source": {"tfrecord": "recs/*.tfrecord"}, "parallelism": 2,
    "stages": [{"shuffle": 8}, {"map": "decode"}, {"resize": [10, 6]}, {"batch": 3},
               {"prefetch": "autotune"}]})");
  const CliRun r = Sluice(dir_, "bench --spec spec.json --epochs 1 --warmup 0 --json o.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(ReadFileOrDie(dir_.file("o.json")));
  EXPECT_EQ(j["elements"], 12);
  EXPECT_EQ(j["batches"], 4);
  EXPECT_EQ(j["bytes"], 12 * (6 * 10 * 3 * 4 + 8));
}

// Run settings on the command line override the spec's; pipeline-shape
// flags cannot be combined with --spec.
TEST_F(BenchCliTest, SpecAndFlags) {
  WriteFileOrDie(dir_.file("spec.json"), R"({
    "source": {"tfrecord": "recs/*.tfrecord"}, "parallelism": 2, "seed": 3,
    "stages": [{"map": "decode"}, {"resize": [8, 8]}, {"batch": 3}]})");
  CliRun r = Sluice(dir_, "bench --spec spec.json --batch 4 --resize 16x16 --epochs 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--resize, --batch cannot be combined with --spec"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("spec.json"), std::string::npos) << r.err;
  // Even a shape flag given with its default value.
  r = Sluice(dir_, "bench --spec spec.json --prefetch autotune --epochs 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--prefetch cannot"), std::string::npos) << r.err;

  r = Sluice(dir_,
             "bench --spec spec.json --parallelism 1 --seed 9 --cores 1 --epochs 1 --warmup 0 "
             "--json o.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(ReadFileOrDie(dir_.file("o.json")));
  EXPECT_EQ(j["batches"], 4);
  for (const json& s : j["stats"]["stages"]) {
    if (s["name"] == "parse" || s["name"] == "resize") {
      EXPECT_EQ(s["parallelism"], 1) << s;
    }
  }
  // Without the flag, the spec's parallelism.
  r = Sluice(dir_, "bench --spec spec.json --epochs 1 --warmup 0 --json o2.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(ReadFileOrDie(dir_.file("o2.json")));
  for (const json& s : j["stats"]["stages"]) {
    if (s["name"] == "parse") {
      EXPECT_EQ(s["parallelism"], 2) << s;
    }
  }

  // An explicit --parallelism autotune overrides the spec's 2 as well.
  r = Sluice(dir_,
             "bench --spec spec.json --parallelism autotune --epochs 1 --warmup 0 "
             "--json o3.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(ReadFileOrDie(dir_.file("o3.json")));
  for (const json& s : j["stats"]["stages"]) {
    if (s["name"] == "parse") {
      EXPECT_EQ(s["autotuned"], true) << s;
    }
  }

  // --no-fusion (or the spec's "map_and_batch_fusion": false) gives the
  // same batches, with batch copying the rows itself.
  r = Sluice(dir_,
             "bench --spec spec.json --no-fusion --cores 1 --epochs 1 --warmup 0 --json o4.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("batch(3) [no map-and-batch fusion]"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("options(seed=3, cpu_budget=1, map_and_batch_fusion=false)"),
            std::string::npos)
      << r.out;
  j = json::parse(ReadFileOrDie(dir_.file("o4.json")));
  EXPECT_EQ(j["batches"], 4);
  WriteFileOrDie(dir_.file("nofusion.json"), R"({
    "source": {"tfrecord": "recs/*.tfrecord"}, "map_and_batch_fusion": false,
    "stages": [{"map": "decode"}, {"resize": [8, 8]}, {"batch": 3}]})");
  r = Sluice(dir_, "bench --spec nofusion.json --epochs 1 --warmup 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[no map-and-batch fusion]"), std::string::npos) << r.err;
  WriteFileOrDie(dir_.file("badfusion.json"), R"({
    "source": {"tfrecord": "recs/*.tfrecord"}, "map_and_batch_fusion": "no"})");
  r = Sluice(dir_, "bench --spec badfusion.json --epochs 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("\"map_and_batch_fusion\" is true or false"), std::string::npos) << r.err;

  // --separate-ops (or "fold_ops": false) runs each image op on its own.
  r = Sluice(dir_, "bench --spec spec.json --separate-ops --epochs 1 --warmup 0 --json o5.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(ReadFileOrDie(dir_.file("o5.json")))["batches"], 4);
  WriteFileOrDie(dir_.file("badfold.json"), R"({
    "source": {"tfrecord": "recs/*.tfrecord"}, "fold_ops": 0})");
  r = Sluice(dir_, "bench --spec badfold.json --epochs 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("\"fold_ops\" is true or false"), std::string::npos) << r.err;

  r = Sluice(dir_, "bench --spec spec.json --epochs 1 --duration 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--duration"), std::string::npos) << r.err;
}

// A glob over a `sluice convert --index` folder matches the shards, their
// .idx files and the labels file: only the shards are read.
TEST_F(BenchCliTest, GlobSkipsSidecars) {
  CliRun r = Sluice(dir_, "convert images imgs --out idx/train --shards 3 --index");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir_.file("idx/train-00000-of-00003.tfrecord.idx")));
  ASSERT_TRUE(fs::exists(dir_.file("idx/train-labels.txt")));
  WriteFileOrDie(dir_.file("idx/README"), "shards of imgs\n");

  r = Sluice(dir_, "bench --tfrecord 'idx/*' --decode --epochs 1 --warmup 0 --json t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(ReadFileOrDie(dir_.file("t.json")))["elements"], 12);
  EXPECT_NE(r.err.find("idx/* matches 3 TFRecord files; skipped 6 files"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("idx/README (not a TFRecord file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("idx/train-00000-of-00003.tfrecord.idx (record index)"), std::string::npos)
      << r.err;

  r = Sluice(dir_, "bench --records 'idx/train-*' --epochs 1 --warmup 0 --json r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(ReadFileOrDie(dir_.file("r.json")))["elements"], 12);
  EXPECT_NE(r.err.find("idx/train-labels.txt (labels file)"), std::string::npos) << r.err;

  // Nothing usable: an error naming the glob and what it matched.
  r = Sluice(dir_, "bench --tfrecord 'idx/*.idx' --epochs 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no TFRecord files among the 3 files idx/*.idx matches"), std::string::npos)
      << r.err;
  // A file named as a shard that is not one: an error naming it.
  WriteFileOrDie(dir_.file("idx/train-00009.tfrecord"), "not records at all");
  r = Sluice(dir_, "bench --records 'idx/*' --epochs 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("idx/train-00009.tfrecord (matched by idx/*) is not a readable TFRecord"),
            std::string::npos)
      << r.err;
}

TEST_F(BenchCliTest, ClearErrors) {
  CliRun r = Sluice(dir_, "bench --tfrecord 'nothing-*.tfrecord' --epochs 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no files match nothing-*.tfrecord"), std::string::npos) << r.err;

  r = Sluice(dir_, "bench --spec missing.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;

  WriteFileOrDie(dir_.file("bad.json"),
                 R"({"source": {"tfrecord": "x"}, "stages": [{"blur": 2}]})");
  r = Sluice(dir_, "bench --spec bad.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("blur"), std::string::npos) << r.err;

  WriteFileOrDie(dir_.file("broken.json"), "{not json");
  r = Sluice(dir_, "bench --spec broken.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("broken.json: not valid JSON"), std::string::npos) << r.err;

  r = Sluice(dir_, "bench --tfrecord x --resize 12");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("WxH"), std::string::npos) << r.err;
  r = Sluice(dir_, "bench --tfrecord x --parallelism lots");
  EXPECT_EQ(r.exit_code, 2);
  r = Sluice(dir_, "bench --tfrecord x --images y");
  EXPECT_EQ(r.exit_code, 2);
  r = Sluice(dir_, "bench --tfrecord 'recs/*.tfrecord' --sweep threads=1..4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("parallelism=1..N"), std::string::npos) << r.err;
  r = Sluice(dir_, "bench --records 'recs/*.tfrecord' --spec bad.json");
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(BenchCliTest, Help) {
  const CliRun r = Sluice(dir_, "bench --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--sweep"), std::string::npos);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  // Value names a newcomer can read, inputs listed first.
  EXPECT_NE(r.out.find("--tfrecord GLOB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--resize WxH"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("TEXT"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("--tfrecord"), r.out.find("--parallelism")) << r.out;
  EXPECT_NE(r.out.find("not with --spec"), std::string::npos) << r.out;
}

// --cores N: the process runs on N CPUs, so the report never says it used
// more (it said 1.80 of 1: idle arena threads and the consumer ran beside).
TEST_F(BenchCliTest, CoresPinsTheProcess) {
  const CliRun r =
      Sluice(dir_,
             "bench --tfrecord 'recs/train-*.tfrecord' --decode --resize 16x16 "
             "--batch 4 --duration 1 --warmup 0.2 --parallelism 2 --cores 1 --json c.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--cores 1: running on CPU "), std::string::npos) << r.err;
  const json j = json::parse(ReadFileOrDie(dir_.file("c.json")));
  EXPECT_EQ(j["cpu_budget"], 1);
  // One CPU can give at most one second of CPU time a second (a little
  // slack for the clocks' grain).
  EXPECT_LE(j["cores_used"].get<double>(), 1.05) << j.dump();
  const CliRun too_many =
      Sluice(dir_, "bench --tfrecord 'recs/train-*.tfrecord' --cores 4096 --epochs 1");
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_NE(too_many.err.find("--cores 4096: this process may run on"), std::string::npos)
      << too_many.err;
}

// An image a stage cannot decode is named in the error.
TEST_F(BenchCliTest, ImageErrorsNameTheFile) {
  WriteFileOrDie(dir_.file("imgs/cat/broken.jpg"), std::string("\xff\xd8\xff\x09garbage", 11));
  const CliRun r = Sluice(dir_, "bench --images imgs --decode --epochs 1 --warmup 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("imgs/cat/broken.jpg"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sluice
