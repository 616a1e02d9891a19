#include "sluice/pipeline/benchmark.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "sluice/pipeline/internal/node.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// VmHWM from /proc/self/status, else ru_maxrss (KiB on Linux).
int64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      long long kib = 0;
      if (std::sscanf(line.c_str() + 6, "%lld", &kib) == 1) return kib * 1024;
    }
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

// The last batch-like stage on the main chain decides.
bool LooksBatched(const Dataset& ds) {
  const pipeline_internal::DatasetNode* n = ds.node().get();
  while (n != nullptr) {
    const std::string& kind = n->kind();
    if (kind == "batch" || kind == "padded_batch") return true;
    if (kind == "unbatch" || kind == "flat_map" || kind == "interleave") return false;
    n = n->inputs().empty() ? nullptr : n->inputs()[0].get();
  }
  return false;
}

// What the consumer counts.
struct Tally {
  int64_t batches = 0, elements = 0, bytes = 0;
  void Add(const Element& e, bool batched) {
    ++batches;
    if (batched && e.size() > 0 && e[0].shape().rank() >= 1) {
      elements += e[0].shape().dim(0);
    } else {
      ++elements;
    }
    bytes += pipeline_internal::ElementBytes(e);
  }
};

// `now` with the counters of `before` subtracted.
IteratorStats Delta(const IteratorStats& now, const IteratorStats& before) {
  IteratorStats d = now;
  d.elapsed_ns = now.elapsed_ns - before.elapsed_ns;
  d.elements = now.elements - before.elements;
  for (size_t i = 0; i < d.stages.size() && i < before.stages.size(); ++i) {
    StageStats& s = d.stages[i];
    const StageStats& b = before.stages[i];
    if (s.name != b.name) continue;
    s.elements -= b.elements;
    s.bytes -= b.bytes;
    s.busy_ns -= b.busy_ns;
    s.wait_ns -= b.wait_ns;
    s.errors_ignored -= b.errors_ignored;
    s.tokens -= b.tokens;
    s.padding_tokens -= b.padding_tokens;
  }
  return d;
}

// A finite number for JSON (the report keeps 0 where a ratio had no
// measured time).
double Finite(double v) { return std::isfinite(v) ? v : 0; }

}  // namespace

Result<BenchmarkReport> Benchmark(const Dataset& ds, const BenchmarkOptions& o) {
  SLUICE_RETURN_IF_ERROR(ds.status());
  if (!(o.warmup_s >= 0) || !std::isfinite(o.warmup_s)) {
    return Status::InvalidArgument(
        fmt::format("Benchmark: warmup_s must be >= 0, got {}", o.warmup_s));
  }
  if (o.epochs < 0) {
    return Status::InvalidArgument(fmt::format("Benchmark: epochs must be >= 0, got {}", o.epochs));
  }
  if (o.epochs == 0 && (!(o.duration_s > 0) || !std::isfinite(o.duration_s))) {
    return Status::InvalidArgument(
        fmt::format("Benchmark: duration_s must be > 0, got {}", o.duration_s));
  }
  if (o.epochs > 0 && ds.cardinality() == kInfiniteCardinality) {
    return Status::InvalidArgument("Benchmark: epochs = " + std::to_string(o.epochs) +
                                   " on an infinite dataset (" + ds.DebugString() +
                                   "); give a duration instead");
  }
  BenchmarkReport report;
  report.batched = o.batched.value_or(LooksBatched(ds));
  report.pipeline = ds.DebugString();
  const Clock::duration warmup =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup_s));

  // Epochs: warm up on a throwaway iterator, then measure whole passes.
  // Duration: warm up and measure on one iterator of the repeated dataset.
  const bool by_epochs = o.epochs > 0;
  if (by_epochs && o.warmup_s > 0) {
    const Dataset repeated = ds.cardinality() == kInfiniteCardinality ? ds : ds.repeat();
    SLUICE_ASSIGN_OR_RETURN(Iterator warm, repeated.iterator());
    const Clock::time_point start = Clock::now();
    while (Clock::now() - start < warmup) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, warm.next());
      if (!e) break;
    }
    report.warmup_seconds = Seconds(Clock::now() - start);
  }
  const Dataset measured = by_epochs ? (o.epochs == 1 ? ds : ds.repeat(o.epochs))
                           : ds.cardinality() == kInfiniteCardinality ? ds
                                                                      : ds.repeat();
  SLUICE_ASSIGN_OR_RETURN(Iterator it, measured.iterator());
  if (!by_epochs && o.warmup_s > 0) {
    const Clock::time_point start = Clock::now();
    while (Clock::now() - start < warmup) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
      if (!e) break;
    }
    report.warmup_seconds = Seconds(Clock::now() - start);
  }

  const IteratorStats before = it.stats();
  const double cpu_before = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(by_epochs ? 0.0 : o.duration_s));
  Clock::time_point next_progress =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(o.progress_interval_s));
  Tally tally;
  Clock::time_point now = start;
  while (by_epochs || now < deadline) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
    now = Clock::now();
    if (!e) break;
    tally.Add(*e, report.batched);
    if (o.progress && now >= next_progress) {
      o.progress(tally.batches, Seconds(now - start));
      next_progress = now + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(o.progress_interval_s));
    }
  }
  report.seconds = Seconds(now - start);
  report.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  report.stats = Delta(it.stats(), before);
  // The repeat added here to fill the duration is not the user's stage.
  const bool added_repeat = by_epochs ? o.epochs > 1 : ds.cardinality() != kInfiniteCardinality;
  if (added_repeat && !report.stats.stages.empty() && report.stats.stages.back().kind == "repeat") {
    report.stats.stages.pop_back();
  }
  report.peak_rss_bytes = PeakRssBytes();
  report.ram_peak = report.stats.ram_peak;
  report.epochs = by_epochs ? o.epochs : 0;
  report.batches = tally.batches;
  report.elements = tally.elements;
  report.bytes = tally.bytes;
  if (report.seconds > 0) {
    report.elements_per_s = static_cast<double>(report.elements) / report.seconds;
    report.batches_per_s = static_cast<double>(report.batches) / report.seconds;
    report.mb_per_s = static_cast<double>(report.bytes) / 1e6 / report.seconds;
    report.cores_used = report.cpu_seconds / report.seconds;
  }
  const int cores = report.stats.cpu_budget > 0 ? report.stats.cpu_budget : 1;
  report.cpu_utilisation = report.cores_used / cores;
  if (!o.trace_path.empty()) SLUICE_RETURN_IF_ERROR(it.WriteTrace(o.trace_path));
  return report;
}

void BenchmarkReport::WriteJson(JsonWriter& w) const {
  auto num = [&](const char* k, double v) { w.Key(k).Double(Finite(v), 6); };
  w.BeginObject();
  w.Key("pipeline").String(pipeline);
  w.Key("batched").Bool(batched);
  w.Key("batches").Int(batches);
  w.Key("elements").Int(elements);
  w.Key("bytes").Int(bytes);
  w.Key("epochs").Int(epochs);
  num("seconds", seconds);
  num("warmup_seconds", warmup_seconds);
  num("elements_per_s", elements_per_s);
  num("batches_per_s", batches_per_s);
  num("mb_per_s", mb_per_s);
  num("cpu_seconds", cpu_seconds);
  num("cores_used", cores_used);
  num("cpu_utilisation", cpu_utilisation);
  w.Key("cpu_budget").Int(stats.cpu_budget);
  w.Key("peak_rss_bytes").Int(peak_rss_bytes);
  w.Key("ram_peak").Int(ram_peak);
  w.Key("ram_budget").Int(stats.ram_budget);
  w.Key("stats");
  stats.WriteJson(w);
  w.EndObject();
}

std::string BenchmarkReport::ToJson() const {
  JsonWriter w({.indent = 2});
  WriteJson(w);
  return w.Take() + "\n";
}

std::string BenchmarkReport::ToString() const {
  std::string o;
  o += fmt::format("pipeline: {}\n", pipeline);
  const std::string span =
      epochs > 0 ? fmt::format("{} epoch{} in {:.3f} s", epochs, epochs == 1 ? "" : "s", seconds)
                 : fmt::format("{:.2f} s", seconds);
  o += fmt::format("measured: {} after {:.2f} s of warm-up\n", span, warmup_seconds);
  if (batched) {
    o += fmt::format("  {:>12.1f} elements/s  ({} elements)\n", elements_per_s, elements);
    o += fmt::format("  {:>12.2f} batches/s   ({} batches)\n", batches_per_s, batches);
  } else {
    o += fmt::format("  {:>12.1f} elements/s  ({} elements)\n", elements_per_s, elements);
  }
  o += fmt::format("  {:>12.1f} MB/s        ({:.1f} MB)\n", mb_per_s, bytes / 1e6);
  o += fmt::format("  cpu: {:.2f} cores used of {} ({:.0f}%), {:.2f} s cpu\n", cores_used,
                   stats.cpu_budget, 100 * cpu_utilisation, cpu_seconds);
  o += fmt::format("  memory: peak rss {:.1f} MB, pipeline buffers peak {:.1f} MB of {:.1f} MB\n",
                   peak_rss_bytes / 1e6, ram_peak / 1e6, stats.ram_budget / 1e6);
  size_t width = 20;
  for (const StageStats& s : stats.stages) width = std::max(width, s.name.size());
  o += fmt::format("{:<{}} {:>10} {:>9} {:>9} {:>6} {:>6} {:>9}  {}\n", "stage", width, "elements",
                   "busy_s", "wait_s", "busy%", "par", "buffer", "autotune");
  const double wall_ns = seconds > 0 ? seconds * 1e9 : 1;
  for (const StageStats& s : stats.stages) {
    o += fmt::format(
        "{:<{}} {:>10} {:>9.3f} {:>9.3f} {:>5.0f}% {:>6} {:>4}/{:<4}  {}\n", s.name, width,
        s.elements, s.busy_ns / 1e9, s.wait_ns / 1e9,
        100.0 * s.busy_ns / wall_ns / static_cast<double>(std::max<int64_t>(1, s.parallelism)),
        s.parallelism, s.buffer_depth, s.buffer_capacity,
        s.autotuned ? (s.tuner_reason.empty() ? "chosen" : s.tuner_reason) : "-");
  }
  return o;
}

}  // namespace sluice
