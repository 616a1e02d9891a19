// AUTOTUNE against an exhaustive grid search, on a pipeline with a cheap
// stage, an expensive (CPU) stage and an I/O-like stage (a wait per element).
//
// For each configuration of the grid (parallelism of the expensive and the
// I/O stage, prefetch depth) it measures elements/s over a window; then it
// runs the same pipeline with every parameter kAutotune and measures
// elements/s in the window [1 s, 3 s] after the iterator is made. Prints
// both, the ratio (target >= 0.95), the RAM peak against the budget, and the
// autotuner's last decisions.
//
//   pipeline_autotune_bench [--window_ms=1500] [--trace=PATH] [--autotune_only]
//       [--rounds=3]
//
// The grid's best sample is biased up by the noise, so the best
// configuration is measured again --rounds times, alternating with the
// autotuned pipeline in the same window; the ratio of medians is the
// comparison (the ratio to the best sample is printed too).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/args.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kRamBudget = 64 << 20;

Element Cheap(Element e) {
  double x = static_cast<double>(e[0].scalar<int64_t>());
  for (int i = 0; i < 200; ++i) x = std::sqrt(x + i);  // ~1 us
  return Element({Tensor::Scalar<double>(x)});
}
Element Expensive(Element e) {
  double x = e[0].scalar<double>();
  for (int i = 0; i < 40000; ++i) x = std::sqrt(x + i);  // ~150 us of CPU
  return Element({Tensor::Scalar<double>(x)});
}
Element Io(Element e) {
  std::this_thread::sleep_for(std::chrono::microseconds(300));  // waits, no CPU
  return e;
}

Dataset Make(int64_t p_exp, int64_t p_io, int64_t prefetch) {
  return Dataset::range(1'000'000'000)
      .map(Io, {.parallelism = p_io, .name = "io"})
      .map(Cheap, {.name = "cheap"})
      .map(Expensive, {.parallelism = p_exp, .name = "expensive"})
      .batch(8)
      .prefetch(prefetch)
      .with_options({.seed = 1, .ram_budget = kRamBudget});
}

double Secs(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Elements/s between `from` and `to` seconds after the iterator is made.
std::string g_trace;  // --trace=PATH: the autotuned run's trace

double Measure(const Dataset& ds, double from, double to, IteratorStats* stats = nullptr) {
  Result<Iterator> it = ds.iterator();
  if (!it.ok()) {
    std::fprintf(stderr, "%s\n", it.status().ToString().c_str());
    std::exit(1);
  }
  const auto t0 = std::chrono::steady_clock::now();
  int64_t n = 0;
  bool counting = false;
  std::chrono::steady_clock::time_point start;
  for (;;) {
    auto e = it->next();
    if (!e.ok() || !e->has_value()) break;
    const auto now = std::chrono::steady_clock::now();
    const double t = Secs(t0, now);
    if (!counting && t >= from) {
      counting = true;
      start = now;
      n = 0;
    }
    if (counting) n += 8;
    if (t >= to) {
      if (stats) {
        *stats = it->stats();
        if (!g_trace.empty()) (void)it->WriteTrace(g_trace);
      }
      return static_cast<double>(n) / Secs(start, now);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice;
  double window_ms = 1500;
  bool autotune_only = false;
  int rounds = 3;
  bench::CommandLine args("pipeline_autotune_bench",
                          "[--window_ms=1500] [--trace=PATH] [--autotune_only] [--rounds=3]");
  args.Add("--window_ms", &window_ms, 1, 1e7)
      .Add("--trace", &g_trace)
      .Switch("--autotune_only", &autotune_only)
      .Add("--rounds", &rounds, 1, 1000)
      .Parse(argc, argv);
  const double window = window_ms / 1000;
  const bool grid = !autotune_only;
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::printf("AUTOTUNE vs grid search (%d CPUs, RAM budget %lld MiB, window %.1f s)\n", cpus,
              static_cast<long long>(kRamBudget >> 20), window);
  double best = 0;
  std::string best_cfg;
  int64_t best_pe = 2, best_pio = 8, best_pf = 1;
  for (int64_t pe = 1; grid && pe <= cpus; ++pe) {
    for (int64_t pio : {1, 2, 4, 8}) {
      for (int64_t pf : {1, 4}) {
        const double r = Measure(Make(pe, pio, pf), 0.3, 0.3 + window);
        std::printf("  grid expensive=%lld io=%lld prefetch=%lld: %9.0f elements/s\n",
                    static_cast<long long>(pe), static_cast<long long>(pio),
                    static_cast<long long>(pf), r);
        if (r > best) {
          best = r;
          best_pe = pe, best_pio = pio, best_pf = pf;
          best_cfg = "expensive=" + std::to_string(pe) + " io=" + std::to_string(pio) +
                     " prefetch=" + std::to_string(pf);
        }
      }
    }
  }
  // The grid's best is the largest of 16 noisy measurements, so it sits
  // above that configuration's typical rate by about the noise (±4% here).
  // Measure the best configuration again, alternating with the autotuned
  // pipeline in the same window after start, and compare medians.
  IteratorStats st;
  std::vector<double> fixed_runs, tuned_runs;
  for (int r = 0; r < rounds; ++r) {
    if (grid) fixed_runs.push_back(Measure(Make(best_pe, best_pio, best_pf), 1.0, 3.0));
    tuned_runs.push_back(Measure(Make(kAutotune, kAutotune, kAutotune), 1.0, 3.0, &st));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const double tuned = median(tuned_runs);
  std::printf("best grid: %s at %.0f elements/s\n", best_cfg.c_str(), best);
  std::printf("autotune (window 1-3 s after start), %d runs:", rounds);
  for (double t : tuned_runs) std::printf(" %.0f", t);
  std::printf("; median %.0f elements/s = %.3f of the grid's best sample\n", tuned,
              grid ? tuned / best : 0.0);
  if (grid) {
    const double fixed = median(fixed_runs);
    std::printf("best configuration re-measured in the same window, %d runs:", rounds);
    for (double f : fixed_runs) std::printf(" %.0f", f);
    std::printf("; median %.0f elements/s\nautotune / best configuration (medians): %.3f\n", fixed,
                tuned / fixed);
  }
  std::printf("ram peak %lld bytes of budget %lld; cpu budget %d; tuner steps %lld\n",
              static_cast<long long>(st.ram_peak), static_cast<long long>(st.ram_budget),
              st.cpu_budget, static_cast<long long>(st.tuner_steps));
  std::printf("%s", st.ToString().c_str());
  return 0;
}
