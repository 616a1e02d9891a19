// `sluice bench`: runs an input pipeline over the user's files and reports
// its throughput, per-stage busy and wait time, the parallelism AUTOTUNE
// chose, CPU use and peak memory (sluice::Benchmark), or with --sweep the
// throughput curve over fixed parallelism settings next to AUTOTUNE.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "bench_pipeline.h"
#include "commands.h"
#include "sluice/pipeline/benchmark.h"

namespace sluice::tools {
namespace {

constexpr std::string_view kCommand = "bench";

struct BenchFlags {
  std::string tfrecord, images, records, spec;
  bool decode = false;
  std::string fused, crop, resize;
  bool flip = false, normalize = false;
  int64_t batch = 0, shuffle = 0;
  std::string parallelism = "autotune", prefetch = "autotune";
  int cores = 0;
  double warmup = 2, duration = 10;
  int64_t epochs = 0;
  std::string json, trace, sweep;
  uint64_t seed = 1;
};

Result<BenchPipelineSpec> SpecFromFlags(const BenchFlags& f) {
  BenchPipelineSpec spec;
  if (!f.spec.empty()) {
    SLUICE_ASSIGN_OR_RETURN(spec, ReadBenchSpec(f.spec));
  } else {
    if (!f.tfrecord.empty()) {
      spec.source = BenchSourceKind::kTFRecord;
      spec.path = f.tfrecord;
    } else if (!f.images.empty()) {
      spec.source = BenchSourceKind::kImages;
      spec.path = f.images;
    } else {
      spec.source = BenchSourceKind::kRecords;
      spec.path = f.records;
    }
    if (f.shuffle > 0) spec.stages.push_back({.kind = BenchStage::kShuffle, .n = f.shuffle});
    BenchStage map{.kind = BenchStage::kMap};
    if (!f.fused.empty()) {
      BenchImageOp op{.kind = BenchImageOp::kFused};
      ParseWxH(f.fused, &op.width, &op.height);
      map.ops.push_back(op);
    } else if (f.decode) {
      map.ops.push_back({.kind = BenchImageOp::kDecode});
    }
    if (!f.crop.empty()) {
      BenchImageOp op{.kind = BenchImageOp::kCrop};
      ParseWxH(f.crop, &op.width, &op.height);
      map.ops.push_back(op);
    }
    if (!f.resize.empty()) {
      BenchImageOp op{.kind = BenchImageOp::kResize};
      ParseWxH(f.resize, &op.width, &op.height);
      map.ops.push_back(op);
    }
    if (f.flip) map.ops.push_back({.kind = BenchImageOp::kFlip});
    if (f.normalize) map.ops.push_back({.kind = BenchImageOp::kNormalize});
    if (!map.ops.empty()) spec.stages.push_back(map);
    if (f.batch > 0) spec.stages.push_back({.kind = BenchStage::kBatch, .n = f.batch});
    int64_t prefetch = kAutotune;
    ParseCountOrAutotune(f.prefetch, 0, &prefetch);
    spec.stages.push_back({.kind = BenchStage::kPrefetch, .n = prefetch});
    spec.seed = f.seed;
  }
  // Flags given explicitly override the spec's values.
  if (f.spec.empty() || f.parallelism != "autotune") {
    ParseCountOrAutotune(f.parallelism, 1, &spec.parallelism);
  }
  if (f.cores > 0) spec.cores = f.cores;
  return spec;
}

BenchmarkOptions RunOptions(const BenchFlags& f) {
  BenchmarkOptions o;
  o.warmup_s = f.warmup;
  o.duration_s = f.duration;
  o.epochs = f.epochs;
  return o;
}

Status WriteText(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Status::Unavailable("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::Unavailable("cannot rename " + tmp + " to " + path);
  }
  return Status::OK();
}

// The largest parallelism AUTOTUNE settled on over the map stages it tuned.
int64_t ChosenParallelism(const BenchmarkReport& r) {
  int64_t chosen = 0;
  for (const StageStats& s : r.stats.stages) {
    if (s.autotuned && s.kind == "map") chosen = std::max(chosen, s.parallelism);
  }
  return chosen;
}

std::string Indent(const std::string& json) {
  std::string s = json;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out;
}

int RunSweep(const BenchFlags& f, BenchPipelineSpec spec, int64_t max_par) {
  struct Point {
    int64_t parallelism;  // kAutotune for the AUTOTUNE run
    BenchmarkReport report;
  };
  std::vector<Point> points;
  BenchmarkOptions options = RunOptions(f);
  std::vector<int64_t> settings;
  for (int64_t p = 1; p <= max_par; ++p) settings.push_back(p);
  settings.push_back(kAutotune);
  for (int64_t p : settings) {
    spec.parallelism = p;
    Result<Dataset> ds = BuildBenchPipeline(spec);
    if (!ds.ok()) return Fail(kCommand, ds.status());
    fmt::print(stderr, "parallelism {}...\n",
               p == kAutotune ? std::string("autotune") : std::to_string(p));
    if (p == kAutotune && !f.trace.empty()) options.trace_path = f.trace;
    Result<BenchmarkReport> r = Benchmark(*ds, options);
    if (!r.ok()) return Fail(kCommand, r.status());
    points.push_back({p, std::move(*r)});
  }
  const BenchmarkReport& autotune = points.back().report;
  const int64_t chosen = ChosenParallelism(autotune);
  // The fixed setting nearest to AUTOTUNE's choice (by throughput if it
  // tuned no map stage).
  size_t closest = 0;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const auto dist = [&](size_t k) {
      return chosen > 0 ? std::abs(static_cast<double>(points[k].parallelism - chosen))
                        : std::abs(points[k].report.elements_per_s - autotune.elements_per_s);
    };
    if (dist(i) < dist(closest)) closest = i;
  }
  const double best = std::max_element(points.begin(), points.end(), [](auto& a, auto& b) {
                        return a.report.elements_per_s < b.report.elements_per_s;
                      })->report.elements_per_s;
  fmt::print("pipeline: {}\n", DescribeBenchPipeline(spec));
  fmt::print("{:<12} {:>12} {:>10} {:>9} {:>7}  {}\n", "parallelism", "elements/s", "batches/s",
             "MB/s", "cores", "");
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const BenchmarkReport& r = p.report;
    std::string label = p.parallelism == kAutotune ? "autotune" : std::to_string(p.parallelism);
    std::string mark;
    if (p.parallelism == kAutotune) {
      mark = chosen > 0 ? fmt::format("<- AUTOTUNE chose {}", chosen) : "<- AUTOTUNE";
    } else if (i == closest) {
      mark = "* closest to AUTOTUNE";
    }
    const int bar = best > 0 ? static_cast<int>(std::lround(20 * r.elements_per_s / best)) : 0;
    fmt::print("{:<12} {:>12.1f} {:>10.2f} {:>9.1f} {:>7.2f}  {:<20} {}\n", label, r.elements_per_s,
               r.batches_per_s, r.mb_per_s, r.cores_used, std::string(bar, '#'), mark);
  }
  if (!f.json.empty()) {
    std::string j = "{\n  \"pipeline\": \"" + DescribeBenchPipeline(spec) + "\",\n";
    j += fmt::format("  \"sweep\": \"parallelism\",\n  \"autotune_chose\": {},\n", chosen);
    j += fmt::format("  \"closest_fixed\": {},\n  \"points\": [\n",
                     points.empty() ? 0 : points[closest].parallelism);
    for (size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      j += fmt::format("    {{\"parallelism\": {}, \"autotune\": {}, \"report\": {}}}{}\n",
                       p.parallelism == kAutotune ? "\"autotune\"" : std::to_string(p.parallelism),
                       p.parallelism == kAutotune ? "true" : "false", Indent(p.report.ToJson()),
                       i + 1 < points.size() ? "," : "");
    }
    j += "  ]\n}\n";
    Status st = WriteText(f.json, j);
    if (!st.ok()) return Fail(kCommand, st);
  }
  return 0;
}

int RunBench(const BenchFlags& f) {
  const int sources =
      !f.tfrecord.empty() + !f.images.empty() + !f.records.empty() + !f.spec.empty();
  if (sources != 1) {
    return Fail(kCommand,
                Status::InvalidArgument("give exactly one input: --tfrecord GLOB, --images DIR, "
                                        "--records GLOB or --spec FILE"));
  }
  if (!(f.duration > 0)) {
    return Fail(kCommand, Status::InvalidArgument("--duration must be > 0 seconds"));
  }
  int64_t sweep_max = 0;
  if (!f.sweep.empty()) {
    const std::string prefix = "parallelism=1..";
    if (f.sweep.rfind(prefix, 0) != 0 ||
        !ParseCountOrAutotune(f.sweep.substr(prefix.size()), 1, &sweep_max) || sweep_max < 1 ||
        sweep_max > 256) {
      return Fail(kCommand, Status::InvalidArgument("--sweep " + f.sweep +
                                                    ": expected parallelism=1..N, N in 1..256"));
    }
  }
  Result<BenchPipelineSpec> spec = SpecFromFlags(f);
  if (!spec.ok()) return Fail(kCommand, spec.status());
  if (sweep_max > 0) return RunSweep(f, *spec, sweep_max);

  Result<Dataset> ds = BuildBenchPipeline(*spec);
  if (!ds.ok()) return Fail(kCommand, ds.status());
  BenchmarkOptions options = RunOptions(f);
  options.trace_path = f.trace;
  fmt::print(stderr, "{}: warm-up {} s, then {}\n", DescribeBenchPipeline(*spec), f.warmup,
             f.epochs > 0 ? fmt::format("{} epoch(s)", f.epochs)
                          : fmt::format("{} s measured", f.duration));
  Result<BenchmarkReport> r = Benchmark(*ds, options);
  if (!r.ok()) return Fail(kCommand, r.status());
  fmt::print("{}", r->ToString());
  if (!f.json.empty()) {
    Status st = WriteText(f.json, r->ToJson());
    if (!st.ok()) return Fail(kCommand, st);
  }
  return 0;
}

CLI::Validator WxH() {
  return CLI::Validator(
      [](std::string& s) {
        int64_t w, h;
        return ParseWxH(s, &w, &h) ? std::string() : "expected WxH such as 224x224";
      },
      "WxH");
}

CLI::Validator CountOrAutotune(int64_t min) {
  return CLI::Validator(
      [min](std::string& s) {
        int64_t v;
        return ParseCountOrAutotune(s, min, &v)
                   ? std::string()
                   : fmt::format("expected a number >= {} or autotune", min);
      },
      "N|autotune");
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measure an input pipeline over your files: elements/s, batches/s, MB/s, per-stage busy and "
      "wait time, the parallelism AUTOTUNE chose, CPU use and peak memory, after a warm-up, for a "
      "fixed time or number of epochs. The pipeline is given by flags (source -> parse -> "
      "[shuffle] -> decode/crop/resize/flip/normalize -> batch -> prefetch) or by a JSON spec "
      "file (docs/bench.md).");
  auto* in = cmd->add_option_group("input", "Exactly one input");
  in->add_option("--tfrecord", f->tfrecord,
                 "TFRecord files (a glob; quote it) of the image schema of `sluice convert` "
                 "(image/encoded, image/class/label)");
  in->add_option("--images", f->images, "Class-per-folder image tree DIR/<class>/<image>");
  in->add_option("--records", f->records,
                 "TFRecord files (glob): read and check records only, no parsing");
  in->add_option("--spec", f->spec, "JSON pipeline spec file (see docs/bench.md)");
  in->require_option(1);

  auto* shape = cmd->add_option_group("pipeline", "Pipeline shape (ignored with --spec)");
  shape->add_flag("--decode", f->decode, "Decode the images (JPEG/PNG, 3 channels)");
  shape
      ->add_option("--fused", f->fused,
                   "Fused decode + random crop + resize to WxH (decode_random_crop_resize)")
      ->check(WxH());
  shape->add_option("--crop", f->crop, "Random crop to WxH (decodes first)")->check(WxH());
  shape->add_option("--resize", f->resize, "Resize to WxH, bilinear (decodes first)")->check(WxH());
  shape->add_flag("--flip", f->flip, "Random left-right flip");
  shape->add_flag("--normalize", f->normalize, "Per-channel normalize with ImageNet mean/stddev");
  shape->add_option("--shuffle", f->shuffle, "Shuffle buffer of N records (before decoding)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  shape->add_option("--batch", f->batch, "Batch size (0: no batching)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  shape->add_option("--prefetch", f->prefetch, "Prefetch buffer: N (0: none) or autotune")
      ->check(CountOrAutotune(0))
      ->capture_default_str();
  cmd->add_option("--parallelism", f->parallelism,
                  "Parallelism of the parse/read and image stages: N or autotune")
      ->check(CountOrAutotune(1))
      ->capture_default_str();
  cmd->add_option("--cores", f->cores, "CPU budget of the pipeline (default: all usable CPUs)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--seed", f->seed, "Seed of shuffles and random crops/flips")
      ->capture_default_str();

  cmd->add_option("--warmup", f->warmup, "Seconds run before measuring")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--duration", f->duration, "Seconds measured (repeating the data as needed)")
      ->check(CLI::Range(1e-3, 1e6))
      ->capture_default_str();
  cmd->add_option("--epochs", f->epochs, "Measure N full passes instead of a duration")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--json", f->json, "Write the report (or all sweep points) as JSON to FILE");
  cmd->add_option("--trace", f->trace,
                  "Write a Chrome/Perfetto trace to FILE (open in ui.perfetto.dev)");
  cmd->add_option("--sweep", f->sweep,
                  "parallelism=1..N: run each fixed parallelism, then autotune, and print the "
                  "throughput curve");
  cmd->footer(
      "Examples:\n"
      "  sluice bench --tfrecord 'data/train-*.tfrecord' --fused 224x224 --flip --normalize "
      "--batch 128\n"
      "  sluice bench --images photos --decode --resize 224x224 --batch 32 --epochs 1 --json "
      "out.json\n"
      "  sluice bench --records 'data/*.tfrecord' --duration 5      # raw read speed\n"
      "  sluice bench --spec pipeline.json --trace trace.json\n"
      "  sluice bench --tfrecord 'data/*.tfrecord' --decode --resize 224x224 --batch 64 "
      "--sweep parallelism=1..8 --json sweep.json\n"
      "  scripts/plot-bench.py sweep.json --out sweep.svg\n"
      "Docs: docs/bench.md");
  cmd->callback([f, exit_code] { *exit_code = RunBench(*f); });
}

}  // namespace sluice::tools
