// AUTOTUNE, tested (issue 24 item 5): stage costs of milliseconds (calls
// that sleep, like I/O, or spin on the CPU), which dominate scheduling noise
// even on a loaded 2-core machine, and assertions on where the tuner goes
// within 3 s and on the budgets it must never pass (measured: the process's
// CPU time over wall time, the RAM accounting's peak).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "sanitizer_slowdown.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/autotune.h"
#include "test_util.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kConvergeSeconds = 3 * testing::kSanitizerSlowdown;

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void SpinMicros(int64_t us) {
  timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1'000'000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

// A map function that waits `ms` (I/O-like: no CPU).
MapFn Sleeping(int ms) {
  return [ms](Element e, const MapContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return e;
  };
}

// A map function that computes for `us` of CPU time.
MapFn Spinning(int64_t us) {
  return [us](Element e, const MapContext&) -> Result<Element> {
    SpinMicros(us);
    return e;
  };
}

int64_t Parallelism(const IteratorStats& st, const std::string& stage) {
  for (const StageStats& s : st.stages) {
    if (s.name == stage) return s.parallelism;
  }
  ADD_FAILURE() << "no stage " << stage;
  return -1;
}

std::string Describe(const IteratorStats& st) {
  std::string out;
  for (const StageStats& s : st.stages) {
    out +=
        s.name + ": parallelism " + std::to_string(s.parallelism) + " (" + s.tuner_reason + ")\n";
  }
  return out;
}

// Reads from `it` until `done` holds for its stats or `seconds` pass, calling
// `each` on the stats after every element; returns the seconds it took, or
// -1 if `done` never held.
double ReadUntil(Iterator& it, double seconds,
                 const std::function<bool(const IteratorStats&)>& done,
                 const std::function<void(const IteratorStats&)>& each = {}) {
  const auto t0 = Clock::now();
  for (;;) {
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (t > seconds) return -1;
    Result<std::optional<Element>> e = it.next();
    if (!e.ok() || !e->has_value()) {
      ADD_FAILURE() << "the pipeline ended: " << e.status();
      return -1;
    }
    const IteratorStats st = it.stats();
    if (each) each(st);
    if (done(st)) return t;
  }
}

// Elements per second over `seconds` of reading.
double Rate(Iterator& it, double seconds) {
  const auto t0 = Clock::now();
  int64_t n = 0;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {
    Result<std::optional<Element>> e = it.next();
    if (!e.ok() || !e->has_value()) break;
    ++n;
  }
  return static_cast<double>(n) / std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(AutotuneTest, StepUpFillsTheBudgetExactly) {
  using pipeline_internal::StepUp;
  // Compute stages (share 1) grow by a quarter, cut to the budget: a map
  // stepped down to 14 or 15 of 16 cores comes back to 16 (before, 15 + 3
  // did not fit whole, so no step was taken and it stayed at 15), and 27 of
  // 32 reaches 32.
  EXPECT_EQ(StepUp(15, 64, 1.0, 15.0, 16), 16);
  EXPECT_EQ(StepUp(14, 64, 1.0, 14.0, 16), 16);
  EXPECT_EQ(StepUp(27, 128, 1.0, 27.0, 32), 32);
  EXPECT_EQ(StepUp(8, 64, 1.0, 8.0, 16), 10);
  EXPECT_EQ(StepUp(3, 64, 1.0, 3.0, 16), 4);
  // Full: no step. Another stage's cores count.
  EXPECT_EQ(StepUp(16, 64, 1.0, 16.0, 16), 16);
  EXPECT_EQ(StepUp(15, 64, 1.0, 15.5, 16), 15);
  EXPECT_EQ(StepUp(12, 64, 1.0, 13.0, 16), 15);
  // Waiting stages double while what they compute fits; never past max.
  EXPECT_EQ(StepUp(4, 16, 0.1, 2.0, 4), 8);
  EXPECT_EQ(StepUp(4, 6, 0.1, 2.0, 4), 6);
  EXPECT_EQ(StepUp(4, 64, 0.0, 2.0, 4), 8);
  EXPECT_EQ(StepUp(4, 64, 0.0, 5.0, 4), 4);
  EXPECT_EQ(StepUp(8, 64, 0.4, 3.4, 4), 10);  // (4.25 - 3.4) / 0.4: 2 more
}

TEST(AutotuneTest, WaitingMapGrowsToTheArena) {
  // cpu_budget 1: the arena has 4 slots, and calls that sleep 4 ms hold no
  // CPU, so the tuner doubles the map from 1 to 4 and throughput follows.
  const Dataset ds = Dataset::range(1'000'000)
                         .map(Sleeping(4), {.parallelism = kAutotune, .name = "io"})
                         .with_options({.cpu_budget = 1});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  ASSERT_EQ(Parallelism(it.stats(), "io"), 1);
  const double t = ReadUntil(it, kConvergeSeconds,
                             [](const IteratorStats& st) { return Parallelism(st, "io") == 4; });
  EXPECT_GE(t, 0) << "not at 4 within " << kConvergeSeconds << " s:\n" << Describe(it.stats());
  // Four 4 ms calls at once: up to 1000 elements/s; one alone 250.
  EXPECT_GT(Rate(it, 0.5), 500) << Describe(it.stats());
}

TEST(AutotuneTest, WaitingMapStopsAtMaxThreads) {
  // As above with Options::max_threads 2: the arena has 2 slots, and the
  // map grows to 2, never past.
  const Dataset ds = Dataset::range(1'000'000)
                         .map(Sleeping(4), {.parallelism = kAutotune, .name = "io"})
                         .with_options({.cpu_budget = 1, .max_threads = 2});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  int64_t most = 0;
  const double t = ReadUntil(
      it, kConvergeSeconds, [](const IteratorStats& st) { return Parallelism(st, "io") == 2; },
      [&](const IteratorStats& st) { most = std::max(most, Parallelism(st, "io")); });
  EXPECT_GE(t, 0) << "not at 2 within " << kConvergeSeconds << " s:\n" << Describe(it.stats());
  ReadUntil(
      it, 0.5, [](const IteratorStats&) { return false; },
      [&](const IteratorStats& st) { most = std::max(most, Parallelism(st, "io")); });
  EXPECT_EQ(most, 2) << Describe(it.stats());
}

const StageStats& Stage(const IteratorStats& st, const std::string& name) {
  for (const StageStats& s : st.stages) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no stage " << name;
  return st.stages.back();
}

TEST(AutotuneTest, StatsCountWhatTheWorkersWaitFor) {
  // Four workers of a cheap map behind a 2 ms sequential stage: they queue
  // for the input's lock.
  {
    const Dataset ds = Dataset::range(1'000'000)
                           .map(Sleeping(2), {.name = "slow"})
                           .map([](Element e) { return e; }, {.parallelism = 4, .name = "fast"})
                           .with_options({.cpu_budget = 4, .autotune = false});
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(it.next().ok());
    const StageStats fast = Stage(it.stats(), "fast");
    EXPECT_GT(fast.input_wait_ns, 0);
    // Every element was pulled through the 2 ms stage holding the lock.
    EXPECT_GE(fast.input_hold_ns, 100 * 2'000'000);
  }
  // A consumer that takes nothing for 50 ms: the workers wait for room.
  {
    const Dataset ds = Dataset::range(1'000'000)
                           .map([](Element e) { return e; }, {.parallelism = 2, .name = "fast"})
                           .with_options({.cpu_budget = 2, .autotune = false});
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(it.next().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GT(Stage(it.stats(), "fast").room_wait_ns, 0);
  }
  // Four computing workers and a budget of one core: they wait for it.
  {
    const Dataset ds = Dataset::range(1'000'000)
                           .map(Spinning(500), {.parallelism = 4, .name = "cpu"})
                           .with_options({.cpu_budget = 1, .autotune = false});
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(it.next().ok());
    EXPECT_GT(it.stats().cpu_wait_ns, 0);
  }
}

TEST(AutotuneTest, MaxThreadsMustBePositive) {
  const Result<Iterator> it = Dataset::range(3).with_options({.max_threads = 0}).iterator();
  ASSERT_FALSE(it.ok());
  EXPECT_EQ(it.status().code(), StatusCode::kInvalidArgument) << it.status().ToString();
  EXPECT_NE(it.status().message().find("max_threads must be at least 1"), std::string::npos)
      << it.status().ToString();
}

TEST(AutotuneTest, ComputeMapNeverGrowsPastTheCpuBudget) {
  // Calls that compute for 1 ms: with cpu_budget 1 the map stays at 1, and
  // the process uses at most one core (plus a margin for the consumer and
  // the runtime).
  const Dataset ds = Dataset::range(1'000'000)
                         .map(Spinning(1000), {.parallelism = kAutotune, .name = "cpu"})
                         .with_options({.cpu_budget = 1});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  const double cpu0 = ProcessCpuSeconds();
  const auto t0 = Clock::now();
  int64_t most = 0;
  ReadUntil(
      it, 1.5, [](const IteratorStats&) { return false; },
      [&](const IteratorStats& st) { most = std::max(most, Parallelism(st, "cpu")); });
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cores = (ProcessCpuSeconds() - cpu0) / wall;
  EXPECT_EQ(most, 1) << Describe(it.stats());
  EXPECT_LE(cores, 1.3) << "CPU time over wall time";
}

TEST(AutotuneTest, IdleStageStepsDown) {
  // A cheap map under a 5 ms sequential stage idles: from its start (the
  // CPU budget, 4) the tuner steps it down to 1.
  const Dataset ds =
      Dataset::range(1'000'000)
          .map(Sleeping(5), {.name = "slow"})
          .map([](Element e) { return e; }, {.parallelism = kAutotune, .name = "cheap"})
          .with_options({.cpu_budget = 4});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  ASSERT_EQ(Parallelism(it.stats(), "cheap"), 4);
  const double t = ReadUntil(it, kConvergeSeconds,
                             [](const IteratorStats& st) { return Parallelism(st, "cheap") == 1; });
  EXPECT_GE(t, 0) << "not at 1 within " << kConvergeSeconds << " s:\n" << Describe(it.stats());
}

TEST(AutotuneTest, InterleaveGrowsForWaitingReads) {
  // Sub-datasets whose reads wait 3 ms (a sequential map inside each): the
  // interleave's read-ahead grows from 1 (the CPU budget) to 4 (its
  // cycle_length is 8, the arena has 4 slots).
  const Dataset ds = Dataset::range(8)
                         .interleave(
                             [](const Element&) -> Result<Dataset> {
                               return Dataset::range(1'000'000).map(Sleeping(3));
                             },
                             {.cycle_length = 8, .parallelism = kAutotune, .name = "files"})
                         .with_options({.cpu_budget = 1});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  ASSERT_EQ(Parallelism(it.stats(), "files"), 1);
  const double t = ReadUntil(it, kConvergeSeconds,
                             [](const IteratorStats& st) { return Parallelism(st, "files") == 4; });
  EXPECT_GE(t, 0) << "not at 4 within " << kConvergeSeconds << " s:\n" << Describe(it.stats());
  if (getenv("DEBUG_TUNE")) fprintf(stderr, "%.2f s\n%s", t, it.stats().ToString().c_str());
  EXPECT_GT(Rate(it, 0.5), 600) << Describe(it.stats());  // one read alone: 333/s
}

TEST(AutotuneTest, WaitingStageFeedsTheComputeStageWithinTheBudget) {
  // 4 ms waits feeding 0.5 ms of compute, cpu_budget 2: the waiting stage
  // grows from 2 to the arena's 8 slots (8 calls of 4 ms are 2000
  // elements/s, what 2 cores of compute can take) while the compute stage
  // never passes 2, and the process never uses more than 2 cores (plus a
  // margin).
  const Dataset ds = Dataset::range(1'000'000)
                         .map(Sleeping(4), {.parallelism = kAutotune, .name = "io"})
                         .map(Spinning(500), {.parallelism = kAutotune, .name = "cpu"})
                         .with_options({.cpu_budget = 2});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  const double cpu0 = ProcessCpuSeconds();
  const auto t0 = Clock::now();
  int64_t most_cpu = 0;
  const double t = ReadUntil(
      it, kConvergeSeconds, [](const IteratorStats& st) { return Parallelism(st, "io") == 8; },
      [&](const IteratorStats& st) { most_cpu = std::max(most_cpu, Parallelism(st, "cpu")); });
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(t, 0) << "the waiting stage did not reach 8 within " << kConvergeSeconds << " s:\n"
                  << Describe(it.stats());
  EXPECT_LE(most_cpu, 2) << Describe(it.stats());
  EXPECT_LE((ProcessCpuSeconds() - cpu0) / wall, 2.3) << "CPU time over wall time";
}

TEST(AutotuneTest, TunedStagesStayWithinTheRamBudget) {
  // 256 KiB results of calls that wait 2 ms, a 2 MiB budget: the tuner may
  // add workers and prefetch room, the buffers never hold more than it.
  constexpr int64_t kBudget = 2 << 20;
  const Dataset ds =
      Dataset::range(1'000'000)
          .map(
              [](Element, const MapContext&) -> Result<Element> {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kUInt8, Shape{256 << 10}));
                return Element({t});
              },
              {.parallelism = kAutotune, .name = "io"})
          .prefetch(kAutotune)
          .with_options({.cpu_budget = 2, .ram_budget = kBudget});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  int64_t most = 0;
  ReadUntil(
      it, 1.5, [](const IteratorStats&) { return false; },
      [&](const IteratorStats& st) { most = std::max(most, st.ram_used); });
  EXPECT_LE(most, kBudget);
  EXPECT_LE(it.stats().ram_peak, kBudget) << Describe(it.stats());
  EXPECT_GE(Parallelism(it.stats(), "io"), 2) << Describe(it.stats());
}

}  // namespace
}  // namespace sluice
