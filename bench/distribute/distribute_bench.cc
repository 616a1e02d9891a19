// What distribution costs a rank: records/s of one rank's share against the
// plain pipeline over the same files, measured in the same run.
//
// The files: 8 indexed TFRecord files of 4,000 tf.train.Examples, each a
// 28x28 gray PNG (about 0.8 KiB, Fashion-MNIST's size, where the cost per
// record weighs most) and a label. Two pipelines, on one thread
// (cpu_budget 1), in order or globally shuffled:
//   parse:  read -> parse the Example -> batch 64 (the worst case: the
//           least work per record)
//   decode: read -> parse -> decode the PNG -> batch 64 (`make demo`'s input)
//
// BM_DistributionCost/<work>/<W>/<shuffled> alternates, round after round,
// the plain pipeline over all records and rank 0 of W reading its share
// through distribute(); it reports the median records/s of both and
// cost_pct, the median over rounds of 100 * (1 - rank rate / plain rate),
// whose target is at most 2.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/timing.h"
#include "sluice/core/rng.h"
#include "sluice/distribute/distribute.h"
#include "sluice/ops/png.h"
#include "sluice/records/example_builder.h"
#include "sluice/records/example_parser.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

using bench::Median;

constexpr int kFiles = 8;
constexpr int kRecordsPerFile = 4000;

// The files' folder, removed at exit.
struct ScratchFolder {
  std::string path = std::filesystem::temp_directory_path().string() + "/sluice-distribute-bench-" +
                     std::to_string(getpid());
  ScratchFolder() { std::filesystem::create_directories(path); }
  ~ScratchFolder() { std::filesystem::remove_all(path); }
};

const std::vector<std::string>& Files() {
  static const ScratchFolder folder;
  static const std::vector<std::string> files = [] {
    std::vector<std::string> out;
    Tensor image = Tensor::Allocate(DType::kUInt8, Shape{28, 28, 1}).value();
    Rng rng(3, 0);
    for (int f = 0; f < kFiles; ++f) {
      const std::string path = folder.path + "/part-" + std::to_string(f) + ".tfrecord";
      TFRecordWriterOptions o;
      o.write_index = true;
      TFRecordWriter w = TFRecordWriter::Open(path, o).value();
      for (int r = 0; r < kRecordsPerFile; ++r) {
        // A blob on a noisy background: compresses as clothing images do.
        uint8_t* px = image.flat<uint8_t>().data();
        for (int i = 0; i < 28 * 28; ++i) {
          const int y = i / 28 - 14, x = i % 28 - 14;
          px[i] = static_cast<uint8_t>((x * x + y * y < 100 ? 180 : 0) + rng.NextU32() % 40);
        }
        ExampleBuilder b;
        b.AddBytes("image", ops::EncodePng(image).value()).AddInt64("label", r % 10);
        if (!w.Write(b.Serialize()).ok()) std::abort();
      }
      if (!w.Close().ok()) std::abort();
      out.push_back(path);
    }
    return out;
  }();
  return files;
}

Dataset Pipeline(bool decode, int world, bool shuffled, bool distributed) {
  static const ExampleParser parser =
      ExampleParser::Create({{"image", FixedLenFeature(DType::kString, {})},
                             {"label", FixedLenFeature(DType::kInt64, {})}})
          .value();
  Dataset ds = TFRecordDataset(Files());
  if (shuffled) ds = ds.global_shuffle({.seed = 1});
  if (distributed) {
    InputContext c;
    c.world_size = world;
    ds = ds.apply(distribute(c));
  }
  ds = ds.map([](Element e) -> Result<Element> {
    const Tensor& record = e[0];
    return parser.ParseSingle(record);
  });
  if (decode) {
    ds = ds.map([](Element e) -> Result<Element> {
      SLUICE_ASSIGN_OR_RETURN(Tensor image, ops::DecodePng(e[0].scalar<std::string_view>()));
      return Element({std::move(image), e[1]});
    });
  }
  return ds.batch(64).with_options({.seed = 1, .cpu_budget = 1});
}

// Records per second of one full pass.
double Rate(const Dataset& ds) {
  const auto t0 = std::chrono::steady_clock::now();
  int64_t records = 0;
  Result<Iterator> it = ds.iterator();
  if (!it.ok()) return 0;
  for (;;) {
    auto b = it->next();
    if (!b.ok() || !b->has_value()) break;
    records += (**b)[0].shape().dim(0);
  }
  return static_cast<double>(records) /
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_DistributionCost(benchmark::State& state) {
  const bool decode = state.range(0) != 0;
  const int world = static_cast<int>(state.range(1));
  const bool shuffled = state.range(2) != 0;
  const Dataset plain = Pipeline(decode, world, shuffled, false);
  const Dataset share = Pipeline(decode, world, shuffled, true);
  Rate(plain);  // warm the page cache, the allocator and the clock
  Rate(share);
  std::vector<double> plain_rates, share_rates, costs;
  for (auto _ : state) {
    const double p = Rate(plain), s = Rate(share);
    plain_rates.push_back(p);
    share_rates.push_back(s);
    costs.push_back(100.0 * (1.0 - s / p));
  }
  state.SetLabel(decode ? "decode" : "parse");
  state.counters["plain_records_per_s"] = Median(plain_rates);
  state.counters["rank_records_per_s"] = Median(share_rates);
  state.counters["cost_pct"] = Median(costs);
}
BENCHMARK(BM_DistributionCost)
    ->ArgNames({"decode", "ranks", "shuffled"})
    ->ArgsProduct({{0, 1}, {1, 2, 4}, {0, 1}})
    ->Iterations(11)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
