// `sluice convert` into an output that already holds something (issue 37,
// items 1-4, 17, 19): --resume with other options, damaged shards, two runs
// at once, another shard count into the same prefix, Ctrl-C, and the words
// of the summary.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "child_process.h"
#include "convert_cli_util.h"
#include "convert_lock.h"
#include "test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::CliRun;
using testing::Contains;
using testing::Jpeg;
using testing::Png;
using testing::Put;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::Sluice;
using testing::Snapshot;

void MakeImages(const std::string& root, int n) {
  for (int i = 0; i < n; ++i) {
    Put(root + "/c" + std::to_string(i % 3) + "/" + std::to_string(i) + ".jpg",
        Jpeg(40, 48, 3, static_cast<uint64_t>(i)));
  }
}

// Waits (up to 4 s) until `dir` holds a temporary file: a convert is writing.
bool WaitForATemporaryFile(const std::string& dir) {
  for (int i = 0; i < 2000; ++i) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (Contains(e.path().filename().string(), ".tmp-")) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Item 1: --resume refuses another conversion's manifest, naming what differs.
TEST(ConvertResumeTest, ResumeWithOtherOptionsIsRefusedNamingThem) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeImages(in, 12);
  const std::string out = " --out " + dir.file("out/t") + " --shards 4";
  ASSERT_EQ(
      Sluice(dir, "convert images " + in + out + " --shuffle --seed 3 --resize 20x20").exit_code,
      0);
  const auto before = Snapshot(dir.file("out"));
  CliRun r =
      Sluice(dir, "convert images " + in + out + " --shuffle --seed 4 --resize 16x16 --resume");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "cannot resume")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--seed 3 (now 4)")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--resize 20x20 (now 16x16)")) << r.err;
  EXPECT_EQ(Snapshot(dir.file("out")), before);  // nothing touched
  // Another --shards count, or another input folder, is another conversion too.
  r = Sluice(dir, "convert images " + in + " --out " + dir.file("out/t") +
                      " --shards 3 --shuffle --seed 3 --resize 20x20 --resume");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "--shards 4 (now 3)")) << r.err;
  Put(in + "/c0/extra.jpg", Jpeg(8, 8, 3, 99));
  r = Sluice(dir, "convert images " + in + out + " --shuffle --seed 3 --resize 20x20 --resume");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "the input (12 files")) << r.err;
  EXPECT_TRUE(Contains(r.err, "now 13 files")) << r.err;
  // The same options resume (nothing to do).
  fs::remove(in + "/c0/extra.jpg");
  r = Sluice(dir, "convert images " + in + out + " --shuffle --seed 3 --resize 20x20 --resume");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "resumed: 4 of 4 shards")) << r.out;
}

// Item 2: a truncated or emptied shard is not "complete already".
TEST(ConvertResumeTest, DamagedShardsAreWrittenAgain) {
  for (bool index : {false, true}) {
    SCOPED_TRACE(index ? "--index" : "no index");
    ScratchDir dir;
    const std::string in = dir.file("in");
    MakeImages(in, 16);
    const std::string cmd = "convert images " + in + " --out " + dir.file("out/t") +
                            " --shards 8 --shuffle" + (index ? " --index" : "");
    ASSERT_EQ(Sluice(dir, cmd).exit_code, 0);
    const auto complete = Snapshot(dir.file("out"));
    fs::resize_file(dir.file("out/t-00003-of-00008.tfrecord"), 100);
    fs::resize_file(dir.file("out/t-00005-of-00008.tfrecord"), 0);
    const CliRun r = Sluice(dir, cmd + " --resume");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, "resumed: 6 of 8 shards")) << r.out;
    EXPECT_TRUE(Contains(r.out,
                         "shard 3 (t-00003-of-00008.tfrecord): its file has 100 bytes, the "
                         "manifest recorded"))
        << r.out;
    EXPECT_TRUE(Contains(r.out, "shard 5 (t-00005-of-00008.tfrecord): its file has 0 bytes"))
        << r.out;
    EXPECT_TRUE(Contains(r.out, "into 2 shards")) << r.out;
    EXPECT_EQ(Snapshot(dir.file("out")), complete);
  }
}

// Item 3: a second convert into the same output fails at once naming the
// first, and leaves the first's files alone.
TEST(ConvertResumeTest, TwoConvertsAtOnceTheSecondFailsNamingTheFirst) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeImages(in, 9);
  const std::string cmd = "convert images " + in + " --out " + dir.file("out/t") + " --shards 3";
  ASSERT_EQ(Sluice(dir, cmd).exit_code, 0);
  const auto want = Snapshot(dir.file("out"));
  // This process holds shard 1 as a running convert would.
  {
    Result<tools::ConvertLock> lock = tools::ConvertLock::Open(dir.file("out/t"));
    ASSERT_TRUE(lock.ok()) << lock.status();
    const size_t shard = 1;
    ASSERT_TRUE(lock->LockShards({&shard, 1}).ok());
    const CliRun r = Sluice(dir, cmd);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(Contains(r.err, "is being written by another `sluice convert` (process " +
                                    std::to_string(::getpid())))
        << r.err;
    EXPECT_TRUE(Contains(r.err, "shard 1")) << r.err;
    // The manifest's lock is waited for, but not for ever: a holder that is
    // stopped or hung (a dead one releases it) is an error naming it.
    ASSERT_TRUE(lock->LockManifest().ok());
    const auto t0 = std::chrono::steady_clock::now();
    const CliRun waited = Sluice(dir, cmd + " --resume");
    const double waited_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock->UnlockManifest();
    EXPECT_EQ(waited.exit_code, 1);
    EXPECT_TRUE(Contains(waited.err, "Unavailable: ")) << waited.err;
    EXPECT_TRUE(Contains(waited.err, "process " + std::to_string(::getpid()) + ", which holds " +
                                         dir.file("out/.t.lock") + " for its manifest"))
        << waited.err;
    EXPECT_TRUE(Contains(waited.err, "for more than 10 s")) << waited.err;
    EXPECT_GE(waited_s, 9.5);
    EXPECT_LT(waited_s, 60);
    // A run with other options may not replace the conversion either.
    ASSERT_TRUE(lock->JoinConversion().ok());
    const CliRun other = Sluice(dir, cmd + " --shuffle");
    EXPECT_EQ(other.exit_code, 1);
    EXPECT_TRUE(Contains(other.err, "for its conversion")) << other.err;
  }
  EXPECT_EQ(Snapshot(dir.file("out")), want);

  // Two real processes: the first is stopped while it writes.
  fs::remove_all(dir.file("out"));
  MakeImages(in, 300);
  ChildProcess first({SLUICE_BINARY, "convert", "images", in, "--out", dir.file("out/t"),
                      "--shards", "3", "--workers", "1", "--check", "full"},
                     dir.file("first.log"));
  ASSERT_TRUE(WaitForATemporaryFile(dir.file("out"))) << ReadFileOrDie(dir.file("first.log"));
  first.Kill(SIGSTOP);
  const CliRun second = Sluice(dir, cmd);
  first.Kill(SIGCONT);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_TRUE(Contains(second.err, "is being written by another `sluice convert`")) << second.err;
  EXPECT_EQ(first.Wait(), 0) << ReadFileOrDie(dir.file("first.log"));
}

// Item 4: another --shards count into the same prefix would leave both sets.
TEST(ConvertResumeTest, ShardsOfAnotherPlanAreRefusedOrDeletedWithOverwrite) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeImages(in, 9);
  const std::string base = "convert images " + in + " --out " + dir.file("out/t") + " --index";
  ASSERT_EQ(Sluice(dir, base + " --shards 2").exit_code, 0);
  CliRun r = Sluice(dir, base + " --shards 3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err,
                       "holds 4 shard files of t that this conversion does not write "
                       "(t-00000-of-00002.tfrecord, t-00000-of-00002.tfrecord.idx, "
                       "t-00001-of-00002.tfrecord and 1 more)"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "--overwrite")) << r.err;
  EXPECT_TRUE(fs::exists(dir.file("out/t-00000-of-00002.tfrecord")));
  r = Sluice(dir, base + " --shards 3 --overwrite");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "--overwrite: deleted 4 shard files")) << r.out;
  size_t shards = 0;
  for (const auto& e : fs::directory_iterator(dir.file("out"))) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".tfrecord")) {
      ++shards;
      EXPECT_TRUE(Contains(name, "-of-00003")) << name;
    }
  }
  EXPECT_EQ(shards, 3u);
  // --compression gzip changes the names too.
  r = Sluice(dir, base + " --shards 3 --compression gzip");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "holds 6 shard files")) << r.err;
}

// Item 19: Ctrl-C says how to go on, leaves no temporary file, and --resume
// then gives the uninterrupted run's bytes.
TEST(ConvertResumeTest, InterruptedRunSaysToResume) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeImages(in, 300);
  const std::vector<std::string> argv = {
      SLUICE_BINARY, "convert",   "images", in,        "--out", dir.file("out/t"), "--shards",
      "6",           "--workers", "1",      "--check", "full",  "--index"};
  ASSERT_EQ(Sluice(dir, "convert images " + in + " --out " + dir.file("ref/t") +
                            " --shards 6 --check full --index")
                .exit_code,
            0);
  ChildProcess child(argv, dir.file("log"));
  ASSERT_TRUE(WaitForATemporaryFile(dir.file("out")));
  child.Kill(SIGINT);
  EXPECT_EQ(child.Wait(), 128 + SIGINT);
  const std::string log = ReadFileOrDie(dir.file("log"));
  EXPECT_TRUE(Contains(log, "interrupted: ")) << log;
  EXPECT_TRUE(Contains(log, "run the same command with --resume to finish")) << log;
  for (const auto& e : fs::directory_iterator(dir.file("out"))) {
    EXPECT_FALSE(Contains(e.path().filename().string(), ".tmp-")) << e.path();
  }
  std::string cmd;
  for (size_t i = 1; i < argv.size(); ++i) cmd += argv[i] + " ";
  const CliRun r = Sluice(dir, cmd + "--resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = Snapshot(dir.file("out")), want = Snapshot(dir.file("ref"));
  EXPECT_EQ(got, want);
}

// Item 17: the summary's words and numbers.
TEST(ConvertResumeTest, SummaryReadsRight) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  Put(in + "/a/one.png", Png(40, 40, 3, 1));
  Put(in + "/a/bro\nken.jpg", "not a jpeg");
  fs::create_symlink(dir.file("nowhere.jpg"), in + "/a/dangling.jpg");
  const CliRun r =
      Sluice(dir, "convert images " + in + " --out " + dir.file("out/t") + " --shards 5");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Contains(r.out, "found 3 images in 1 class under")) << r.out;
  EXPECT_TRUE(Contains(r.out, "converted 1 image into 5 shards")) << r.out;
  EXPECT_TRUE(Contains(r.out, " KB written")) << r.out;  // not "0.0 MB"
  EXPECT_TRUE(Contains(r.out, "note: 2 of 5 shards are empty: there are more shards than images"))
      << r.out;
  EXPECT_TRUE(Contains(r.err, "skipped 2 images")) << r.err;
  EXPECT_TRUE(Contains(r.err, "  a/bro\\nken.jpg: ")) << r.err;  // one line
  // The path stays in the reason.
  EXPECT_TRUE(
      Contains(r.err, "a/dangling.jpg: cannot open " + in + "/a/dangling.jpg: No such file"))
      << r.err;
  const CliRun one =
      Sluice(dir, "convert images " + in + " --out " + dir.file("one/t") + " --shards 1");
  EXPECT_TRUE(Contains(one.out, "into 1 shard in")) << one.out;
}

// A manifest that is not one (edited, damaged, of another tool) stops a
// --resume with a reason, and a new run replaces it.
TEST(ConvertResumeTest, ABrokenManifestIsAnErrorNotACrash) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeImages(in, 6);
  const std::string cmd = "convert images " + in + " --out " + dir.file("out/t") + " --shards 2";
  ASSERT_EQ(Sluice(dir, cmd).exit_code, 0);
  for (const std::string& text :
       {std::string(R"({"manifest": "sluice convert", "manifest": [1], "version": 1})"),
        std::string(R"({"manifest": "sluice convert", "version": "1"})"), std::string("[]"),
        std::string("{"),
        std::string(R"({"manifest": "sluice convert", "version": 1, )"
                    R"("command": "convert images", "options": {"a": 1}})")}) {
    SCOPED_TRACE(text);
    testing::WriteFileOrDie(dir.file("out/t-manifest.json"), text);
    const CliRun r = Sluice(dir, cmd + " --resume");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(Contains(r.err, "cannot resume: ")) << r.err;
    EXPECT_TRUE(Contains(r.err, "t-manifest.json is not a sluice convert manifest")) << r.err;
  }
  const CliRun fresh = Sluice(dir, cmd);
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_EQ(Sluice(dir, cmd + " --resume").exit_code, 0);
}

}  // namespace
}  // namespace sluice
