// Crash safety of checkpoint saving, tested by killing (issue 24 item 6): a
// helper process saves through a CheckpointManager in a loop and is sent
// SIGKILL at 20 random moments (half of the runs with CheckpointOptions::
// sync). After every kill the folder's latest checkpoint restores, its
// values are one step's (the data goes with its index), and the next run
// goes on from it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "child_process.h"
#include "sluice/nn/checkpoint.h"
#include "sluice/nn/variable.h"
#include "test_util.h"

namespace sluice::nn {
namespace {

using testing::ChildProcess;
using testing::ScratchDir;

constexpr int kKills = 20;

// Restores the latest checkpoint of `dir` into fresh variables; returns its
// step, after checking that every weight holds that step.
int64_t RestoreLatest(const std::string& dir) {
  const std::optional<std::string> latest = LatestCheckpoint(dir);
  EXPECT_TRUE(latest.has_value()) << "no restorable latest checkpoint in " << dir;
  if (!latest) return -1;
  Variable weights("weights",
                   DeviceTensor(Device::Cpu(), *Tensor::Zeros(DType::kFloat32, {512, 1024})));
  Variable step("step", DeviceTensor(Device::Cpu(), *Tensor::Scalar<int64_t>(0).Clone()), false);
  Checkpoint ckpt;
  EXPECT_TRUE(ckpt.Track("weights", &weights).ok());
  EXPECT_TRUE(ckpt.Track("step", &step).ok());
  Result<RestoreResult> r = ckpt.Restore(*latest);
  EXPECT_TRUE(r.ok()) << *latest << ": " << r.status();
  if (!r.ok()) return -1;
  EXPECT_TRUE(r->AssertConsumed().ok()) << r->AssertConsumed();
  const int64_t s = step.Read()->scalar<int64_t>();
  const Tensor w = *weights.Read();
  for (float x : w.flat<float>()) {
    if (x != static_cast<float>(s)) {
      ADD_FAILURE() << *latest << ": a weight holds " << x << ", not step " << s;
      break;
    }
  }
  EXPECT_EQ(ckpt.save_counter(), s) << *latest;
  return s;
}

TEST(CheckpointKillTest, KilledWhileSavingTheLatestCheckpointRestores) {
  ScratchDir dir;
  const std::string ckpts = dir.file("ckpt");
  // One save to start from, and how long a save takes.
  const auto t0 = std::chrono::steady_clock::now();
  {
    ChildProcess first({CHECKPOINT_KILL_HELPER, ckpts, "5"}, dir.file("helper.log"));
    ASSERT_EQ(first.Wait(), 0) << testing::ReadFileOrDie(dir.file("helper.log"));
  }
  const double save_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 5;
  int64_t step = RestoreLatest(ckpts);
  ASSERT_EQ(step, 5);

  const uint64_t seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(save_ms) + " ms per save");
  std::mt19937_64 rng(seed);
  // Over the start-up and a few saves, so kills land in every phase of one.
  std::uniform_real_distribution<double> at(0, 4 * save_ms + 20);
  for (int k = 0; k < kKills; ++k) {
    const bool sync = k % 2 == 1;
    const double ms = at(rng);
    SCOPED_TRACE("kill " + std::to_string(k) + " after " + std::to_string(ms) + " ms" +
                 (sync ? " (sync)" : ""));
    {
      ChildProcess child({CHECKPOINT_KILL_HELPER, ckpts, "0", sync ? "sync" : "nosync"},
                         dir.file("helper.log"));
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
      child.Kill(SIGKILL);
      EXPECT_EQ(child.Wait(), 128 + SIGKILL) << testing::ReadFileOrDie(dir.file("helper.log"));
    }
    const int64_t now = RestoreLatest(ckpts);
    ASSERT_GE(now, step) << "the latest checkpoint went back";
    step = now;
  }
  // And the job goes on from there.
  ChildProcess last({CHECKPOINT_KILL_HELPER, ckpts, "1"}, dir.file("helper.log"));
  ASSERT_EQ(last.Wait(), 0) << testing::ReadFileOrDie(dir.file("helper.log"));
  EXPECT_EQ(RestoreLatest(ckpts), step + 1);
  std::printf("%.1f ms per save; after %d kills the latest checkpoint is step %lld\n", save_ms,
              kKills, static_cast<long long>(step));
}

}  // namespace
}  // namespace sluice::nn
