// bench/common (args.h, timing.h): what the bench programs share, and
// bench/peers/peer_util.h's GlobRecordFiles.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/args.h"
#include "common/timing.h"
#include "peers/peer_util.h"
#include "test_util.h"

namespace sluice::bench {
namespace {

struct Flags {
  std::string mode;
  int threads = 0;
  int64_t count = 7;
  uint64_t seed = 1;
  double seconds = 10;
  std::vector<int> batches = {128};
  bool quick = false;
};

CommandLine Parser(Flags* a) {
  CommandLine p("prog");
  p.Add("--mode", &a->mode)
      .Add("--threads", &a->threads, 1, 64)
      .Add("--count", &a->count)
      .Add("--seed", &a->seed)
      .Add("--seconds", &a->seconds)
      .Add("--batches", &a->batches, 1, 4096)
      .Switch("--quick", &a->quick);
  return p;
}

void Parse(Flags* a, std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>("prog")};
  for (std::string& s : args) argv.push_back(s.data());
  Parser(a).Parse(static_cast<int>(argv.size()), argv.data());
}

TEST(BenchArgsTest, ParsesEachTypeInBothForms) {
  Flags a;
  Parse(&a, {"--mode", "read", "--threads=4", "--seconds", "2.5", "--count", "-3", "--seed=9",
             "--batches", "64,256", "--quick"});
  EXPECT_EQ(a.mode, "read");
  EXPECT_EQ(a.threads, 4);
  EXPECT_EQ(a.seconds, 2.5);
  EXPECT_EQ(a.count, -3);
  EXPECT_EQ(a.seed, 9u);
  EXPECT_EQ(a.batches, (std::vector<int>{64, 256}));
  EXPECT_TRUE(a.quick);
  Flags defaults;
  Parse(&defaults, {});
  EXPECT_EQ(defaults.count, 7);
  EXPECT_EQ(defaults.batches, std::vector<int>{128});
  EXPECT_FALSE(defaults.quick);
  Flags empty_value;
  Parse(&empty_value, {"--mode="});
  EXPECT_EQ(empty_value.mode, "");
}

// A bad command line is a usage error: the message, then the usage, on
// stderr, exit status 2.
TEST(BenchArgsDeathTest, ClearErrors) {
  Flags a;
  EXPECT_EXIT(Parse(&a, {"--thread", "4"}), ::testing::ExitedWithCode(2),
              "prog: unknown flag --thread \\(flags: --mode --threads --count --seed --seconds "
              "--batches --quick\\)\nusage: prog \\[--mode VALUE\\]");
  EXPECT_EXIT(Parse(&a, {"--thread=4"}), ::testing::ExitedWithCode(2),
              "prog: unknown flag --thread ");
  EXPECT_EXIT(Parse(&a, {"extra"}), ::testing::ExitedWithCode(2),
              "prog: unexpected argument 'extra'\nusage: prog");
  EXPECT_EXIT(Parse(&a, {"--threads"}), ::testing::ExitedWithCode(2),
              "prog: missing value after --threads\nusage: prog");
  EXPECT_EXIT(Parse(&a, {"--threads", "4x"}), ::testing::ExitedWithCode(2),
              "prog: --threads: expected a number in 1..64, got '4x'");
  EXPECT_EXIT(Parse(&a, {"--threads=65"}), ::testing::ExitedWithCode(2),
              "--threads: expected a number in 1..64, got '65'");
  EXPECT_EXIT(Parse(&a, {"--threads", "99999999999"}), ::testing::ExitedWithCode(2),
              "--threads: expected a number");
  EXPECT_EXIT(Parse(&a, {"--seconds", ""}), ::testing::ExitedWithCode(2),
              "--seconds: expected a number, got ''");
  EXPECT_EXIT(Parse(&a, {"--seconds", "nan"}), ::testing::ExitedWithCode(2),
              "--seconds: expected a number");
  EXPECT_EXIT(Parse(&a, {"--seed", "-1"}), ::testing::ExitedWithCode(2),
              "--seed: expected a number >= 0, got '-1'");
  for (const char* bad : {"", "1,,2", "1,", "1,x", "0,4"}) {
    EXPECT_EXIT(Parse(&a, {"--batches", bad}), ::testing::ExitedWithCode(2),
                "--batches: expected comma-separated integers in 1..4096")
        << bad;
  }
  EXPECT_EXIT(Parse(&a, {"--quick=yes"}), ::testing::ExitedWithCode(2), "--quick takes no value");
}

TEST(BenchArgsTest, UsageListsFlagsAndSynopsis) {
  Flags a;
  CommandLine p("prog", "--mode read --count N");
  p.Add("--mode", &a.mode).Add("--count", &a.count).Switch("--quick", &a.quick);
  EXPECT_EQ(p.Usage(),
            "usage: prog [--mode VALUE] [--count VALUE] [--quick]\n  prog --mode read --count N\n");
}

// --help wins over anything else on the line: the usage on stdout, status 0.
TEST(BenchArgsDeathTest, HelpPrintsUsageAndExitsZero) {
  Flags a;
  EXPECT_EXIT(
      {
        Parse(&a, {"--thread", "4", "--help"});
        std::exit(1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        Parse(&a, {"-h"});
        std::exit(1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(BenchTimingTest, MedianIsTheMiddleSample) {
  EXPECT_EQ(Median({3}), 3);
  EXPECT_EQ(Median({5, 1, 3}), 3);
  EXPECT_EQ(Median({4, 1, 3, 2}), 3);  // the upper middle
  const Clock::time_point t0 = Clock::now();
  EXPECT_GE(Since(t0), 0);
  EXPECT_GT(ProcessCpuSeconds(), 0);
}

TEST(PeerUtilTest, GlobSkipsSidecars) {
  testing::ScratchDir dir;
  for (const char* name : {"s-00000-of-00002.tfrecord", "s-00001-of-00002.tfrecord",
                           "s-00000-of-00002.tfrecord.idx", "s-labels.txt"}) {
    testing::WriteFileOrDie(dir.file(name), "x");
  }
  const std::vector<std::string> files = peers::GlobRecordFiles("prog", dir.file("s-*"));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(std::filesystem::path(files[1]).filename(), "s-00001-of-00002.tfrecord");
  EXPECT_EXIT(peers::GlobRecordFiles("prog", dir.file("*.idx")), ::testing::ExitedWithCode(1),
              "prog: no files match .*\\.idx");
}

}  // namespace
}  // namespace sluice::bench
