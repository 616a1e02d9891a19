// Benchmark(): exact counts over fixed epochs, the JSON report, errors, and
// the warm-up left out of the measurement.
#include "sluice/pipeline/benchmark.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "sluice/pipeline/dataset.h"
#include "test_util.h"

namespace sluice {
namespace {

using json = nlohmann::json;

// range(10) -> map (to a float32 [3] vector) -> batch(4): 3 batches a pass
// (4, 4, 2 rows) of 12 bytes a row.
Dataset RangeMapBatch() {
  return Dataset::range(10)
      .map([](Element e) -> Result<Element> {
        const float v = static_cast<float>(e[0].scalar<int64_t>());
        SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector(std::vector<float>{v, v, v}));
        return Element({t});
      })
      .batch(4);
}

TEST(BenchmarkTest, FixedEpochsCountsExactly) {
  Result<BenchmarkReport> r =
      Benchmark(RangeMapBatch(), {.warmup_s = 0.02, .duration_s = 1, .epochs = 3});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->batched);
  EXPECT_EQ(r->epochs, 3);
  EXPECT_EQ(r->batches, 9);
  EXPECT_EQ(r->elements, 30);
  EXPECT_EQ(r->bytes, 30 * 3 * 4);
  EXPECT_GT(r->seconds, 0);
  EXPECT_GT(r->elements_per_s, 0);
  EXPECT_NEAR(r->batches_per_s * r->seconds, 9, 1e-6);
  EXPECT_GT(r->peak_rss_bytes, 0);
  EXPECT_GE(r->cpu_seconds, 0);
  // Per-stage counts are the measured passes' only (the warm-up ran on its
  // own iterator).
  bool saw_batch = false;
  for (const StageStats& s : r->stats.stages) {
    if (s.kind == "batch") {
      saw_batch = true;
      EXPECT_EQ(s.elements, 9);
    }
    if (s.kind == "map") {
      EXPECT_EQ(s.elements, 30);
    }
  }
  EXPECT_TRUE(saw_batch);
  EXPECT_EQ(r->stats.elements, 9);
}

TEST(BenchmarkTest, UnbatchedCountsElements) {
  Result<BenchmarkReport> r =
      Benchmark(Dataset::range(7).batch(2).unbatch(), {.warmup_s = 0, .epochs = 1});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->batched);
  EXPECT_EQ(r->batches, 7);
  EXPECT_EQ(r->elements, 7);
  EXPECT_EQ(r->bytes, 7 * 8);
  // Told explicitly.
  r = Benchmark(Dataset::range(6).batch(3), {.warmup_s = 0, .epochs = 1, .batched = false});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->elements, 2);
}

TEST(BenchmarkTest, JsonHasTheFields) {
  Result<BenchmarkReport> r = Benchmark(RangeMapBatch(), {.warmup_s = 0, .epochs = 1});
  ASSERT_TRUE(r.ok()) << r.status();
  const json j = json::parse(r->ToJson());
  for (const char* key : {"pipeline", "batched", "batches", "elements", "bytes", "seconds",
                          "elements_per_s", "batches_per_s", "mb_per_s", "cpu_seconds",
                          "cores_used", "cpu_utilisation", "peak_rss_bytes", "ram_peak", "stats"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["batches"], 3);
  EXPECT_EQ(j["elements"], 10);
  ASSERT_TRUE(j["stats"]["stages"].is_array());
  ASSERT_FALSE(j["stats"]["stages"].empty());
  for (const json& s : j["stats"]["stages"]) {
    EXPECT_TRUE(s.contains("busy_ns"));
    EXPECT_TRUE(s.contains("wait_ns"));
    EXPECT_TRUE(s.contains("parallelism"));
  }
  const std::string text = r->ToString();
  EXPECT_NE(text.find("elements/s"), std::string::npos) << text;
  EXPECT_NE(text.find("batch"), std::string::npos) << text;
}

TEST(BenchmarkTest, PipelineErrorsComeBack) {
  Dataset failing = Dataset::range(100).map([](Element e) -> Result<Element> {
    if (e[0].scalar<int64_t>() == 5) return Status::DataLoss("element five is broken");
    return e;
  });
  Result<BenchmarkReport> r = Benchmark(failing, {.warmup_s = 0, .epochs = 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("element five"), std::string::npos) << r.status();
  // Also in duration mode and during the warm-up.
  r = Benchmark(failing, {.warmup_s = 0.05, .duration_s = 0.05});
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  // Build errors and bad options.
  EXPECT_EQ(Benchmark(Dataset::range(0, 5, 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Benchmark(Dataset::range(3), {.duration_s = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Benchmark(Dataset::range(3).repeat(), {.epochs = 1}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(BenchmarkTest, WarmupIsExcluded) {
  // Every element the pipeline makes is counted here; the report must count
  // only those produced after the warm-up.
  auto made = std::make_shared<std::atomic<int64_t>>(0);
  Dataset ds = Dataset::range(1'000'000'000).map([made](Element e) {
    made->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return e;
  });
  Result<BenchmarkReport> r = Benchmark(ds, {.warmup_s = 0.15, .duration_s = 0.15});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->warmup_seconds, 0.15);
  EXPECT_GE(r->seconds, 0.15);
  EXPECT_LT(r->seconds, 1.0);
  EXPECT_GT(r->elements, 0);
  // A synchronous pipeline: made = warm-up elements + measured elements.
  EXPECT_LT(r->elements, made->load());
  EXPECT_GT(made->load() - r->elements, 0);
  for (const StageStats& s : r->stats.stages) {
    if (s.kind == "map") {
      EXPECT_EQ(s.elements, r->elements);
    }
  }
  EXPECT_EQ(r->stats.elements, r->elements);
  EXPECT_LT(r->stats.elapsed_ns, 1'000'000'000);
}

TEST(BenchmarkTest, WritesTrace) {
  testing::ScratchDir dir;
  const std::string path = dir.file("trace.json");
  Result<BenchmarkReport> r = Benchmark(RangeMapBatch().prefetch(2),
                                        {.warmup_s = 0, .duration_s = 0.05, .trace_path = path});
  ASSERT_TRUE(r.ok()) << r.status();
  const json trace = json::parse(testing::ReadFileOrDie(path));
  EXPECT_TRUE(trace["traceEvents"].is_array());
}

}  // namespace
}  // namespace sluice
