// The same pipeline and seed give the same elements in the same order on any
// machine (issue 37 item 11): what decides the order (interleave's
// cycle_length, TFRecordDataset's num_parallel_reads, both kAutotune here)
// must not follow the CPU count. Each pipeline is built and read under
// several cpu_budgets and several CPU affinity masks (set on the thread that
// builds and reads it, which is what the defaults look at) and the orders
// compared exactly.
#include <gtest/gtest.h>
#include <sched.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::ScratchDir;

constexpr int kFiles = 20;  // more than kAutotuneCycleLength, more than the cores
constexpr int kRecords = 3;

std::vector<std::string> WriteFiles(const ScratchDir& dir) {
  std::vector<std::string> paths;
  for (int f = 0; f < kFiles; ++f) {
    char name[32];
    std::snprintf(name, sizeof(name), "part-%02d.tfrecord", f);
    paths.push_back(dir.file(name));
    auto w = TFRecordWriter::Open(paths.back());
    EXPECT_TRUE(w.ok()) << w.status();
    for (int r = 0; r < kRecords + f % 3; ++r) {
      EXPECT_TRUE(w->Write("f" + std::to_string(f) + "r" + std::to_string(r)).ok());
    }
    EXPECT_TRUE(w->Close().ok());
  }
  return paths;
}

// The CPUs this process may run on.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Affinity masks to try: all allowed CPUs, the first alone, the last alone,
// the first two.
std::vector<std::vector<int>> Masks() {
  const std::vector<int> all = AllowedCpus();
  std::vector<std::vector<int>> masks = {all};
  if (all.size() > 1) {
    masks.push_back({all.front()});
    masks.push_back({all.back()});
  }
  if (all.size() > 2) masks.push_back({all[0], all[1]});
  return masks;
}

// Builds and reads make(cpu_budget) in a thread pinned to `cpus` (0: the
// budget unset, so the pipeline takes the affinity's CPU count).
std::vector<std::string> ReadPinned(const std::function<Dataset()>& make, int cpu_budget,
                                    const std::vector<int>& cpus) {
  std::vector<std::string> out;
  std::thread([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
    Dataset ds = make();
    if (cpu_budget > 0) ds = ds.with_options({.cpu_budget = cpu_budget});
    out = ReadAll(ds);
  }).join();
  return out;
}

void ExpectSameOrderEverywhere(const std::function<Dataset()>& make,
                               const std::vector<std::string>& want) {
  ASSERT_FALSE(want.empty());
  for (const std::vector<int>& cpus : Masks()) {
    // Budgets up to 8 (the most other tests use): a budget raises the
    // process's TBB worker limit for good, and the tests that follow would
    // share the cores with that many spinning workers.
    for (int budget : {0, 1, 2, 3, 5, 8}) {
      SCOPED_TRACE("cpu_budget " + (budget ? std::to_string(budget) : std::string("unset")) +
                   ", affinity " + std::to_string(cpus.size()) + " CPUs from " +
                   std::to_string(cpus.front()));
      EXPECT_EQ(ReadPinned(make, budget, cpus), want);
    }
  }
}

TEST(OrderOnAnyMachineTest, InterleaveWithAutotuneCycleLength) {
  ScratchDir dir;
  WriteFiles(dir);
  const auto make = [&] {
    return Dataset::list_files(dir.file("part-*.tfrecord"))
        .interleave(tfrecords(), {.parallelism = kAutotune})
        .map([](Element e) { return e; }, {.parallelism = kAutotune})
        .shuffle(8, {.seed = 7})
        .prefetch(kAutotune);
  };
  // kAutotune means the documented constant.
  const std::vector<std::string> want =
      ReadAll(Dataset::list_files(dir.file("part-*.tfrecord"))
                  .interleave(tfrecords(), {.cycle_length = kAutotuneCycleLength})
                  .shuffle(8, {.seed = 7}));
  ExpectSameOrderEverywhere(make, want);
}

TEST(OrderOnAnyMachineTest, TFRecordDatasetWithAutotuneParallelReads) {
  ScratchDir dir;
  const std::vector<std::string> files = WriteFiles(dir);
  const auto make = [&] {
    return TFRecordDataset(files, {.num_parallel_reads = kAutotune})
        .map([](Element e) { return e; }, {.parallelism = kAutotune})
        .shuffle(8, {.seed = 7});
  };
  const std::vector<std::string> want = ReadAll(
      TFRecordDataset(files, {.num_parallel_reads = kAutotuneCycleLength}).shuffle(8, {.seed = 7}));
  ExpectSameOrderEverywhere(make, want);
  // Fewer files than the constant: all of them at once.
  const std::vector<std::string> few(files.begin(), files.begin() + 5);
  EXPECT_EQ(ReadAll(TFRecordDataset(few, {.num_parallel_reads = kAutotune})),
            ReadAll(TFRecordDataset(few, {.num_parallel_reads = 5})));
}

}  // namespace
}  // namespace sluice
