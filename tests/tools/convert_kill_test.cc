// Crash safety of `sluice convert`, tested by killing (issue 24 item 6): the
// binary is sent SIGKILL at 20 moments spread at random over the length of
// an uninterrupted run. After each kill no final name holds a partial file
// (every file under a final name is byte for byte the uninterrupted run's),
// and `--resume` then writes exactly the uninterrupted run's files (shards,
// .idx, labels) and leaves no temporary behind. Half of the runs use --sync.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "convert_cli_util.h"
#include "convert_manifest.h"
#include "test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::CliRun;
using testing::Jpeg;
using testing::Put;
using testing::ScratchDir;
using testing::Sluice;
using testing::Snapshot;

constexpr int kKills = 20;

std::string ReadFileOrDieOr(const std::string& path) {
  return fs::exists(path) ? testing::ReadFileOrDie(path) : std::string("<missing>");
}

// The files of `dir` that a reader would take for output: not hidden.
std::map<std::string, std::string> FinalFiles(const std::string& dir) {
  std::map<std::string, std::string> out;
  if (!fs::exists(dir)) return out;
  for (auto& [name, bytes] : Snapshot(dir)) {
    if (!name.starts_with(".")) out[name] = bytes;
  }
  return out;
}

TEST(ConvertKillTest, KilledAnywhereNoPartialFileAndResumeGivesTheSameBytes) {
  ScratchDir dir;
  const std::string src = dir.file("photos");
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 200; ++i) {
      Put(src + "/class" + std::to_string(c) + "/img" + std::to_string(i) + ".jpg",
          Jpeg(96, 128, 3, static_cast<uint64_t>(c * 1000 + i)));
    }
  }
  const std::string opts = " --shards 12 --workers 2 --index --check full";

  // The uninterrupted run, and how long it takes: the shorter of two runs,
  // so that a first run slowed by cold caches or a busy machine does not
  // spread the kills past the end of the later ones.
  double run_ms = 0;
  for (const char* out : {"ref", "ref_again"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const CliRun run =
        Sluice(dir, "convert images " + src + " --out " + dir.file(out) + "/train" + opts);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(run.exit_code, 0) << run.err;
    run_ms = run_ms == 0 ? ms : std::min(run_ms, ms);
  }
  fs::remove_all(dir.file("ref_again"));
  const std::map<std::string, std::string> want = Snapshot(dir.file("ref"));
  ASSERT_EQ(want.size(), 12u * 2 + 3);  // shards, their .idx, labels, manifest, the lock file

  const uint64_t seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", uninterrupted run " +
               std::to_string(static_cast<int>(run_ms)) + " ms");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  int killed_midway = 0;
  for (int k = 0; k < kKills; ++k) {
    const bool sync = k % 2 == 1;
    const std::string out = dir.file("run" + std::to_string(k));
    // Stratified: kill k falls in the k-th twentieth of the run.
    const double at_ms = run_ms * (k + u(rng)) / kKills;
    SCOPED_TRACE("kill " + std::to_string(k) + " at " + std::to_string(static_cast<int>(at_ms)) +
                 " ms" + (sync ? " (--sync)" : ""));
    {
      std::vector<std::string> argv = {SLUICE_BINARY,  "convert",  "images", src,         "--out",
                                       out + "/train", "--shards", "12",     "--workers", "2",
                                       "--index",      "--check",  "full"};
      if (sync) argv.push_back("--sync");
      ChildProcess child(argv, dir.file("child.log"));
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(at_ms));
      child.Kill(SIGKILL);
      if (child.Wait() == 128 + SIGKILL) ++killed_midway;
    }
    // No final name holds a partial or stale file; the manifest lists only
    // shards that are whole (the uninterrupted run's bytes).
    for (const auto& [name, bytes] : FinalFiles(out)) {
      if (name == "train-manifest.json") {
        Result<std::optional<tools::ConvertManifest>> m = tools::ReadManifest(out + "/" + name);
        ASSERT_TRUE(m.ok() && m->has_value()) << m.status();
        for (const auto& [shard, entry] : (*m)->complete) {
          ASSERT_TRUE(want.contains(entry.file)) << entry.file;
          EXPECT_EQ(want.at(entry.file).size(), entry.bytes) << entry.file;
          EXPECT_EQ(ReadFileOrDieOr(out + "/" + entry.file), want.at(entry.file)) << entry.file;
        }
        continue;
      }
      auto it = want.find(name);
      ASSERT_NE(it, want.end()) << "unexpected file " << name;
      EXPECT_TRUE(bytes == it->second) << name << " is not the uninterrupted run's file";
    }
    // --resume finishes with the same bytes, and no temporary is left.
    const CliRun resumed = Sluice(dir, "convert images " + src + " --out " + out + "/train" + opts +
                                           " --resume" + (sync ? " --sync" : ""));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const std::map<std::string, std::string> got = Snapshot(out);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, bytes] : want) {
      auto it = got.find(name);
      ASSERT_NE(it, got.end()) << name << " missing after --resume";
      EXPECT_TRUE(it->second == bytes) << name << " differs from the uninterrupted run's";
    }
    fs::remove_all(out);
  }
  // Most kills land while the run is working (the last ones may come after
  // it finished on a slow machine).
  EXPECT_GE(killed_midway, kKills / 2);
  std::printf("uninterrupted run: %.0f ms; %d of %d kills landed before the end\n", run_ms,
              killed_midway, kKills);
}

}  // namespace
}  // namespace sluice
