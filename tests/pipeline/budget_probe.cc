// budget_probe CASE [SCRATCH_DIR]: runs one adversarial pipeline in a fresh
// process and prints what the process itself measured, as one JSON line:
//   {"case":..., "status":"OK" or the error, "elements":N, "ram_budget":B,
//    "rss_growth":bytes, "cpu_budget":C, "cpu_seconds":s, "wall_seconds":s}
// rss_growth is the peak resident set (VmHWM, reset through
// /proc/self/clear_refs just before the pipeline is made) minus the resident
// set then; cpu_seconds is the process's user + system time over the
// pipeline's life (getrusage), wall_seconds its wall time, and
// most_concurrent_calls the most compute calls that ever ran at once (the
// cores the pipeline would use on an idle machine, however loaded this one
// is). budget_test.cc
// runs it and checks the numbers against the budgets (issue 24 item 3).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

int64_t StatusKb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(f, line)) {
    if (line.compare(0, n, key) == 0) return std::stoll(line.substr(n + 1));
  }
  return -1;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// An element of `bytes` uint8 bytes, every page written (resident).
Result<Element> Filled(int64_t bytes, uint8_t value) {
  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kUInt8, Shape{bytes}));
  std::memset(t.raw_data(), value, static_cast<size_t>(bytes));
  return Element({t});
}

MapFn MakeFilled(int64_t bytes) {
  return [bytes](Element e, const MapContext&) -> Result<Element> {
    return Filled(bytes, static_cast<uint8_t>(e[0].scalar<int64_t>()));
  };
}

// Compute calls running now, and the most ever at once: how many cores the
// pipeline would keep busy on a machine that has them, whatever the load.
std::atomic<int> g_active{0};
std::atomic<int> g_most_active{0};

// Keeps a core busy for `us` microseconds of thread CPU time.
void Spin(int64_t us) {
  const int now = g_active.fetch_add(1) + 1;
  int most = g_most_active.load();
  while (now > most && !g_most_active.compare_exchange_weak(most, now)) {
  }
  struct Leave {
    ~Leave() { g_active.fetch_sub(1); }
  } leave;
  timespec t0;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  for (;;) {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    if ((t.tv_sec - t0.tv_sec) * 1'000'000 + (t.tv_nsec - t0.tv_nsec) / 1000 >= us) return;
  }
}

MapFn Spinning(int64_t us) {
  return [us](Element e, const MapContext&) -> Result<Element> {
    Spin(us);
    return e;
  };
}

struct Case {
  Options options;
  std::function<Dataset()> make;
  int64_t max_elements = -1;  // -1: all
  double max_seconds = 1e9;
  int consumer_sleep_ms = 0;  // after each element: a slow consumer
};

// 32 files of 4 records of 256 KiB each (records larger than the 64 KiB read
// buffers, so each gets a buffer of its own).
std::vector<std::string> WriteFiles(const std::string& dir) {
  std::vector<std::string> files;
  Rng rng(24);
  std::string record(256 * 1024, '\0');
  for (int f = 0; f < 32; ++f) {
    files.push_back(dir + "/part-" + std::to_string(f) + ".tfrecord");
    TFRecordWriter w = TFRecordWriter::Open(files.back()).value();
    for (int r = 0; r < 4; ++r) {
      for (char& c : record) c = static_cast<char>(rng.NextU32());
      if (!w.Write(record).ok()) std::abort();
    }
    if (!w.Close().ok()) std::abort();
  }
  return files;
}

std::map<std::string, Case> Cases(const std::string& scratch) {
  std::map<std::string, Case> c;
  // Huge elements through a parallel map and a prefetch, slow consumer.
  c["huge_elements"] = {
      .options = {.ram_budget = 48 * kMiB},
      .make =
          [] {
            return Dataset::range(40).map(MakeFilled(8 * kMiB), {.parallelism = 4}).prefetch(4);
          },
      .consumer_sleep_ms = 10};
  // Many files open at once, every one read ahead.
  c["interleave_many_files"] = {.options = {.ram_budget = 6 * kMiB},
                                .make =
                                    [scratch] {
                                      std::vector<std::string> files = WriteFiles(scratch);
                                      Tensor names = *Tensor::FromStrings(files);
                                      return Dataset::from_tensor_slices({names})
                                          .interleave(tfrecords({.buffer_size = 64 * 1024}),
                                                      {.cycle_length = 32, .parallelism = 8})
                                          .prefetch(4);
                                    },
                                .consumer_sleep_ms = 5};
  // Batches being built (rows and the stacked copy) over a parallel map.
  c["batch_building"] = {.options = {.ram_budget = 64 * kMiB, .map_and_batch_fusion = false},
                         .make =
                             [] {
                               return Dataset::range(96)
                                   .map(MakeFilled(kMiB), {.parallelism = 4})
                                   .batch(24)
                                   .prefetch(2);
                             },
                         .consumer_sleep_ms = 20};
  // A big shuffle buffer fed by a parallel map.
  c["big_shuffle"] = {.options = {.ram_budget = 64 * kMiB},
                      .make =
                          [] {
                            return Dataset::range(400)
                                .map(MakeFilled(256 * 1024), {.parallelism = 4})
                                .shuffle(160, {.seed = 1})
                                .prefetch(8);
                          },
                      .consumer_sleep_ms = 1};
  // An in-memory cache larger than the budget.
  c["cache_in_memory"] = {
      .options = {.ram_budget = 32 * kMiB}, .make = [] {
        return Dataset::range(48).map(MakeFilled(kMiB), {.parallelism = 2}).cache("").repeat(2);
      }};
  // One element larger than the whole budget.
  c["element_too_big"] = {.options = {.ram_budget = 16 * kMiB}, .make = [] {
                            return Dataset::range(4).map(MakeFilled(32 * kMiB), {.parallelism = 2});
                          }};
  // More files open at once than the budget holds read buffers for.
  c["open_files_too_many"] = {.options = {.ram_budget = kMiB}, .make = [scratch] {
                                std::vector<std::string> files = WriteFiles(scratch);
                                Tensor names = *Tensor::FromStrings(files);
                                return Dataset::from_tensor_slices({names}).interleave(
                                    tfrecords({.buffer_size = 64 * 1024}),
                                    {.cycle_length = 32, .parallelism = 8});
                              }};
  // One batch larger than the whole budget.
  c["batch_too_big"] = {.options = {.ram_budget = 16 * kMiB},
                        .make = [] { return Dataset::range(64).map(MakeFilled(kMiB)).batch(32); }};
  // CPU: a compute map with a fixed parallelism above the budget.
  c["cpu_fixed_parallelism"] = {
      .options = {.cpu_budget = 1},
      .make = [] { return Dataset::range(1'000'000).map(Spinning(500), {.parallelism = 8}); },
      .max_seconds = 1.5};
  // CPU: a parallel interleave whose sub-datasets compute.
  c["cpu_interleave"] = {.options = {.cpu_budget = 1},
                         .make =
                             [] {
                               return Dataset::range(8).interleave(
                                   [](const Element&) -> Result<Dataset> {
                                     return Dataset::range(1'000'000).map(Spinning(500));
                                   },
                                   {.cycle_length = 8, .parallelism = 8});
                             },
                         .max_seconds = 1.5};
  // CPU: a sequential map in the consumer's thread over a parallel one.
  c["cpu_consumer_and_workers"] = {.options = {.cpu_budget = 1},
                                   .make =
                                       [] {
                                         return Dataset::range(1'000'000)
                                             .map(Spinning(300), {.parallelism = 4})
                                             .map(Spinning(300));
                                       },
                                   .max_seconds = 1.5};
  // I/O: calls that wait still overlap (the arena's 4 x budget slots).
  c["io_overlap"] = {.options = {.cpu_budget = 1},
                     .make =
                         [] {
                           return Dataset::range(1'000'000).map(
                               [](Element e) {
                                 std::this_thread::sleep_for(std::chrono::milliseconds(10));
                                 return e;
                               },
                               {.parallelism = kAutotune});
                         },
                     .max_seconds = 1.5};
  return c;
}

std::string Escape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
  }
  return out;
}

int Run(const std::string& name, const std::string& scratch) {
  std::map<std::string, Case> cases = Cases(scratch);
  auto it = cases.find(name);
  if (it == cases.end()) {
    std::fprintf(stderr, "budget_probe: unknown case %s\n", name.c_str());
    return 2;
  }
  Case& c = it->second;
  // For exploring: PROBE_RAM_BUDGET / PROBE_CPU_BUDGET override the case's.
  if (const char* v = std::getenv("PROBE_RAM_BUDGET")) c.options.ram_budget = std::atoll(v);
  if (const char* v = std::getenv("PROBE_CPU_BUDGET")) c.options.cpu_budget = std::atoi(v);
  // Warm up: the thread pool and the allocator, so that they are in the
  // baseline.
  {
    Result<Iterator> warm = Dataset::range(64)
                                .map([](Element e) { return e; }, {.parallelism = 8})
                                .with_options({.cpu_budget = 8})
                                .iterator();
    for (bool more = warm.ok(); more;) {
      Result<std::optional<Element>> e = warm->next();
      more = e.ok() && e->has_value();
    }
  }
  const Dataset ds = c.make().with_options(c.options);
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";  // VmHWM := VmRSS
  }
  const int64_t rss0 = StatusKb("VmRSS:");
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  Status status;
  int64_t n = 0;
  std::string stages;  // "name:parallelism" of each stage, at the end
  int64_t ram_peak = 0;
  {
    Result<Iterator> iter = ds.iterator();
    if (!iter.ok()) status = iter.status();
    while (status.ok() && (c.max_elements < 0 || n < c.max_elements) && elapsed() < c.max_seconds) {
      Result<std::optional<Element>> e = iter->next();
      if (!e.ok()) {
        status = e.status();
        break;
      }
      if (!e->has_value()) break;
      ++n;
      e = Result<std::optional<Element>>(std::optional<Element>());  // drop it before sleeping
      if (c.consumer_sleep_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(c.consumer_sleep_ms));
      }
    }
    if (iter.ok()) {
      const IteratorStats st = iter->stats();
      ram_peak = st.ram_peak;
      for (const StageStats& s : st.stages) {
        stages += (stages.empty() ? "" : " ") + s.name + ":" + std::to_string(s.parallelism);
      }
    }
  }
  const double wall = elapsed();
  const double cpu = CpuSeconds() - cpu0;
  const int64_t peak = StatusKb("VmHWM:");
  std::printf(
      "{\"case\":\"%s\",\"status\":\"%s\",\"elements\":%lld,\"ram_budget\":%lld,"
      "\"rss_growth\":%lld,\"ram_peak\":%lld,\"cpu_budget\":%d,\"cpu_seconds\":%.3f,"
      "\"wall_seconds\":%.3f,\"most_concurrent_calls\":%d,\"stages\":\"%s\"}\n",
      name.c_str(), Escape(status.ToString()).c_str(), static_cast<long long>(n),
      static_cast<long long>(c.options.ram_budget.value_or(-1)),
      static_cast<long long>((peak - rss0) * 1024), static_cast<long long>(ram_peak),
      c.options.cpu_budget.value_or(-1), cpu, wall, g_most_active.load(), stages.c_str());
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: budget_probe CASE [SCRATCH_DIR]\n");
    return 2;
  }
  return sluice::Run(argv[1], argc > 2 ? argv[2] : "/tmp");
}
