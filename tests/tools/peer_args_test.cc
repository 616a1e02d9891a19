// bench/peers/peer_args.h: the flag parsing shared by the peer programs.
#include "peer_args.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace sluice::peers {
namespace {

struct Args {
  std::string mode;
  int threads = 0;
  int64_t count = 7;
  double seconds = 10;
};

PeerArgs Parser(Args* a) {
  PeerArgs p("prog");
  p.Add("--mode", &a->mode)
      .Add("--threads", &a->threads)
      .Add("--count", &a->count)
      .Add("--seconds", &a->seconds);
  return p;
}

void Parse(Args* a, std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>("prog")};
  for (std::string& s : args) argv.push_back(s.data());
  Parser(a).Parse(static_cast<int>(argv.size()), argv.data());
}

TEST(PeerArgsTest, ParsesEachType) {
  Args a;
  Parse(&a, {"--mode", "read", "--threads", "4", "--seconds", "2.5", "--count", "-3"});
  EXPECT_EQ(a.mode, "read");
  EXPECT_EQ(a.threads, 4);
  EXPECT_EQ(a.seconds, 2.5);
  EXPECT_EQ(a.count, -3);
  Args defaults;
  Parse(&defaults, {});
  EXPECT_EQ(defaults.count, 7);
}

// A bad command line is a usage error: the message, then the usage, on
// stderr, exit status 2.
TEST(PeerArgsDeathTest, ClearErrors) {
  Args a;
  EXPECT_EXIT(Parse(&a, {"--thread", "4"}), ::testing::ExitedWithCode(2),
              "prog: unknown flag --thread \\(flags: --mode --threads --count --seconds\\)\n"
              "usage: prog \\[--mode VALUE\\]");
  EXPECT_EXIT(Parse(&a, {"--threads"}), ::testing::ExitedWithCode(2),
              "prog: missing value after --threads\nusage: prog");
  EXPECT_EXIT(Parse(&a, {"--threads", "4x"}), ::testing::ExitedWithCode(2),
              "prog: --threads: expected a number, got '4x'");
  EXPECT_EXIT(Parse(&a, {"--seconds", ""}), ::testing::ExitedWithCode(2),
              "--seconds: expected a number");
}

TEST(PeerArgsTest, UsageListsFlagsAndSynopsis) {
  Args a;
  PeerArgs p("prog", "--mode read --count N");
  p.Add("--mode", &a.mode).Add("--count", &a.count);
  EXPECT_EQ(p.Usage(),
            "usage: prog [--mode VALUE] [--count VALUE]\n  prog --mode read --count N\n");
}

// --help wins over anything else on the line: the usage on stdout, status 0.
TEST(PeerArgsDeathTest, HelpPrintsUsageAndExitsZero) {
  Args a;
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

TEST(PeerArgsTest, GlobSkipsSidecars) {
  testing::ScratchDir dir;
  for (const char* name : {"s-00000-of-00002.tfrecord", "s-00001-of-00002.tfrecord",
                           "s-00000-of-00002.tfrecord.idx", "s-labels.txt"}) {
    testing::WriteFileOrDie(dir.file(name), "x");
  }
  const std::vector<std::string> files = GlobRecordFiles("prog", dir.file("s-*"));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(std::filesystem::path(files[1]).filename(), "s-00001-of-00002.tfrecord");
  EXPECT_EXIT(GlobRecordFiles("prog", dir.file("*.idx")), ::testing::ExitedWithCode(1),
              "prog: no TFRecord files match .*\\.idx");
}

}  // namespace
}  // namespace sluice::peers
