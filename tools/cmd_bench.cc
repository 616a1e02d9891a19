// `sluice bench`: runs an input pipeline over the user's files and reports
// its throughput, per-stage busy and wait time, the parallelism AUTOTUNE
// chose, CPU use and peak memory (sluice::Benchmark), or with --sweep the
// throughput curve over fixed parallelism settings next to AUTOTUNE.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "bench_pipeline.h"
#include "commands.h"
#include "record_files.h"
#include "sluice/core/file.h"
#include "sluice/pipeline/benchmark.h"
#include "wxh.h"

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
  bool no_fusion = false;
  bool separate_ops = false;
  // What the command line gave explicitly (CLI11 counts), for --spec.
  std::vector<std::string> shape_given;  // pipeline-shape flags, e.g. "--batch"
  bool parallelism_given = false, seed_given = false;
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
  }
  // Run settings given on the command line override the spec's values (the
  // shape flags cannot be combined with --spec: RunBench checks).
  if (f.spec.empty() || f.parallelism_given) {
    ParseCountOrAutotune(f.parallelism, 1, &spec.parallelism);
  }
  if (f.spec.empty() || f.seed_given) spec.seed = f.seed;
  if (f.cores > 0) spec.cores = f.cores;
  if (f.no_fusion) spec.map_and_batch_fusion = false;
  if (f.separate_ops) spec.fold_ops = false;
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
  return WriteFileAtomically(path, text);
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

// --cores N: the pipeline's CPU budget, and the CPUs the whole process (the
// consumer thread and idle arena threads too) runs on: the first N it may
// use. So "cores used" is at most N, as a reader of the report expects.
Status PinToCores(int cores) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return Status::Unavailable(fmt::format("--cores {}: cannot read this process's CPUs: {}", cores,
                                           std::strerror(errno)));
  }
  if (cores > CPU_COUNT(&allowed)) {
    return Status::InvalidArgument(
        fmt::format("--cores {}: this process may run on {} CPUs", cores, CPU_COUNT(&allowed)));
  }
  cpu_set_t pinned;
  CPU_ZERO(&pinned);
  std::string list;
  for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < cores; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CPU_SET(cpu, &pinned);
    list += (taken++ ? "," : "") + std::to_string(cpu);
  }
  // Threads made later (the pipeline's) inherit the mask of this one.
  if (::sched_setaffinity(0, sizeof(pinned), &pinned) != 0) {
    return Status::Unavailable(
        fmt::format("--cores {}: cannot pin to CPUs {}: {}", cores, list, std::strerror(errno)));
  }
  fmt::print(stderr, "sluice {}: --cores {}: running on CPU{} {}\n", kCommand, cores,
             cores == 1 ? "" : "s", list);
  return Status::OK();
}

int RunBench(const BenchFlags& f) {
  const int sources =
      !f.tfrecord.empty() + !f.images.empty() + !f.records.empty() + !f.spec.empty();
  if (sources != 1) {
    return Fail(kCommand,
                Status::InvalidArgument("give exactly one input: --tfrecord GLOB, --images DIR, "
                                        "--records GLOB or --spec FILE"));
  }
  if (!f.spec.empty() && !f.shape_given.empty()) {
    std::string given;
    for (const std::string& flag : f.shape_given) given += (given.empty() ? "" : ", ") + flag;
    fmt::print(stderr,
               "sluice {}: {} cannot be combined with --spec: the stages of {} define the "
               "pipeline. Edit its \"stages\", or give the whole pipeline by flags instead of "
               "--spec. (--parallelism, --cores and --seed do override the spec's values.)\n",
               kCommand, given, f.spec);
    return 2;  // a usage error, as CLI11's
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
  if (spec->source != BenchSourceKind::kImages) {
    // Say which matched files are left out (indexes, labels...).
    Result<RecordFileMatch> match = MatchRecordFiles(spec->path);
    if (!match.ok()) return Fail(kCommand, match.status());
    if (!match->skipped.empty()) {
      fmt::print(stderr, "sluice {}: {} matches {} TFRecord file{}; {}\n", kCommand, spec->path,
                 match->files.size(), match->files.size() == 1 ? "" : "s", match->SkippedNote());
    }
  }
  if (spec->cores > 0) {
    Status pinned = PinToCores(spec->cores);
    if (!pinned.ok()) return Fail(kCommand, pinned);
  }
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

// Validators with no description: the option's type name says it.
CLI::Validator WxH() {
  return CLI::Validator(
      [](std::string& s) {
        int64_t w, h;
        return ParseWxH(s, &w, &h) ? std::string() : "expected WxH such as 224x224";
      },
      "");
}

CLI::Validator CountOrAutotune(int64_t min) {
  return CLI::Validator(
      [min](std::string& s) {
        int64_t v;
        return ParseCountOrAutotune(s, min, &v)
                   ? std::string()
                   : fmt::format("expected a number >= {} or autotune", min);
      },
      "");
}

template <typename T>
CLI::Validator Range(T min, T max) {
  return CLI::Range(min, max).description("");
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measure an input pipeline over your files: elements/s, batches/s, MB/s, per-stage busy and "
      "wait time, the parallelism AUTOTUNE chose, CPU use and peak memory. A warm-up runs first "
      "and is left out; then the pipeline runs for --duration seconds (repeating the data) or "
      "--epochs full passes.\n"
      "The pipeline comes from the flags:\n"
      "  source -> [shuffle(N) of records] -> parse (--tfrecord) | read (--images)\n"
      "    -> decode or fused, crop, resize, flip, normalize (one map stage, in that order)\n"
      "    -> [batch(N)] -> prefetch\n"
      "or, for other pipelines, from a JSON spec file (--spec FILE, see docs/bench.md).");
  auto* in = cmd->add_option_group("input", "Exactly one input");
  in->add_option("--tfrecord", f->tfrecord,
                 "TFRecord files of the image schema `sluice convert` writes (image/encoded, "
                 "image/class/label); quote the glob. .idx and labels files it matches are "
                 "skipped")
      ->type_name("GLOB");
  in->add_option("--images", f->images,
                 "Image folder DIR/<class>/<image>.jpg|.png, as `sluice convert images` reads")
      ->type_name("DIR");
  in->add_option("--records", f->records,
                 "Any TFRecord files; quote the glob. Measures reading and CRC checks only: no "
                 "parsing or image stages")
      ->type_name("GLOB");
  in->add_option("--spec", f->spec, "JSON pipeline spec file (format in docs/bench.md)")
      ->type_name("FILE");
  in->require_option(1);

  auto* shape = cmd->add_option_group(
      "pipeline shape", "Pipeline shape (not with --spec: the spec's \"stages\" define it)");
  std::vector<CLI::Option*> shape_opts;
  shape_opts.push_back(
      shape->add_flag("--decode", f->decode, "Decode the images to 3-channel uint8 (JPEG/PNG)"));
  shape_opts.push_back(shape
                           ->add_option("--fused", f->fused,
                                        "Decode only a random crop window, resized to WxH (fused "
                                        "decode_random_crop_resize; instead of --decode)")
                           ->type_name("WxH")
                           ->check(WxH()));
  shape_opts.push_back(shape->add_option("--crop", f->crop, "Random crop to WxH (decodes first)")
                           ->type_name("WxH")
                           ->check(WxH()));
  shape_opts.push_back(shape
                           ->add_option("--resize", f->resize,
                                        "Bilinear resize to WxH, float32 out (decodes first); "
                                        "batching images of different sizes needs it or --fused")
                           ->type_name("WxH")
                           ->check(WxH()));
  shape_opts.push_back(shape->add_flag("--flip", f->flip, "Random left-right flip"));
  shape_opts.push_back(shape->add_flag(
      "--normalize", f->normalize,
      "Subtract the ImageNet mean and divide by its stddev, per channel (float32 out)"));
  shape_opts.push_back(
      shape
          ->add_option("--shuffle", f->shuffle,
                       "Shuffle buffer of N records, before parsing and decoding (0: none)")
          ->type_name("N")
          ->check(Range(int64_t{0}, int64_t{1} << 40)));
  shape_opts.push_back(shape->add_option("--batch", f->batch, "Batch size (0: no batching)")
                           ->type_name("N")
                           ->check(Range(int64_t{0}, int64_t{1} << 30)));
  shape_opts.push_back(shape
                           ->add_option("--prefetch", f->prefetch,
                                        "Buffer after the last stage, in elements (batches if "
                                        "batched): N (0: none) or autotune")
                           ->type_name("N|autotune")
                           ->check(CountOrAutotune(0))
                           ->capture_default_str());

  auto* run = cmd->add_option_group(
      "settings", "Run settings (with --spec too: they override the spec's values)");
  CLI::Option* par_opt = run->add_option("--parallelism", f->parallelism,
                                         "Threads of each parse/read and image stage, or autotune")
                             ->type_name("N|autotune")
                             ->check(CountOrAutotune(1))
                             ->capture_default_str();
  run->add_option("--cores", f->cores,
                  "CPU budget of the pipeline (default: all the CPUs this process may use)")
      ->type_name("N")
      ->check(Range(1, 4096));
  run->add_flag(
      "--no-fusion", f->no_fusion,
      "Turn map-and-batch fusion off: batch copies every row itself (on by default, a map "
      "feeding batch writes its rows into the batch's buffer; docs/pipeline.md)");
  run->add_flag("--separate-ops", f->separate_ops,
                "Run every image op on its own. By default a decode, crop and resize (or fused) on "
                "encoded bytes, with a flip and a normalize right after, run as one op that "
                "resizes rows as they are decoded and writes into the batch: the same bytes "
                "(docs/bench.md)");
  CLI::Option* seed_opt =
      run->add_option("--seed", f->seed, "Seed of the shuffle and the random crops and flips")
          ->type_name("N")
          ->capture_default_str();

  auto* measure = cmd->add_option_group("measurement", "What is measured and written");
  measure
      ->add_option("--warmup", f->warmup,
                   "Seconds run and thrown away first (thread pools, decoders, page cache, the "
                   "autotuner's first steps)")
      ->type_name("S")
      ->check(Range(0.0, 86400.0))
      ->capture_default_str();
  CLI::Option* duration_opt =
      measure
          ->add_option("--duration", f->duration, "Seconds measured, repeating the data as needed")
          ->type_name("S")
          ->check(Range(1e-3, 1e6))
          ->capture_default_str();
  measure
      ->add_option("--epochs", f->epochs,
                   "Measure exactly N full passes over the data instead of a duration")
      ->type_name("N")
      ->check(Range(int64_t{1}, int64_t{1} << 30))
      ->excludes(duration_opt);
  measure->add_option("--json", f->json, "Write the report (or all sweep points) as JSON to FILE")
      ->type_name("FILE");
  measure
      ->add_option("--trace", f->trace,
                   "Write a Chrome/Perfetto trace to FILE (open in ui.perfetto.dev; with --sweep, "
                   "of the autotune run)")
      ->type_name("FILE");
  measure
      ->add_option("--sweep", f->sweep,
                   "Measure each fixed parallelism 1..N, then autotune (each with the whole "
                   "warm-up and duration), and print the throughput curve")
      ->type_name("parallelism=1..N");
  cmd->footer(
      "Examples:\n"
      "  sluice bench --tfrecord 'data/train-*.tfrecord' --fused 224x224 --flip --normalize "
      "--batch 128\n"
      "  sluice bench --images photos --decode --resize 224x224 --batch 32 --epochs 1 --json "
      "out.json\n"
      "  sluice bench --records 'data/*.tfrecord' --duration 5      # raw read speed\n"
      "  sluice bench --spec pipeline.json --parallelism 4 --trace trace.json\n"
      "  sluice bench --tfrecord 'data/*.tfrecord' --decode --resize 224x224 --batch 64 "
      "--sweep parallelism=1..8 --json sweep.json\n"
      "  scripts/plot-bench.py sweep.json --out sweep.svg\n"
      "Docs: docs/bench.md");
  cmd->callback([f, exit_code, shape_opts, par_opt, seed_opt] {
    for (CLI::Option* o : shape_opts) {
      if (o->count() > 0) f->shape_given.push_back(o->get_name());
    }
    f->parallelism_given = par_opt->count() > 0;
    f->seed_given = seed_opt->count() > 0;
    *exit_code = RunBench(*f);
  });
}

}  // namespace sluice::tools
