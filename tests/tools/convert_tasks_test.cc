// `sluice convert` split across tasks: --num-tasks / --task-index and --mpi.
// The pieces directly (the task's share, the option checks, the launcher's
// variables), RunConversion with a share, and the real binary: every split
// gives the bytes of a one-process run, the labels file is written once,
// bad options write nothing, and a task resumes alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "convert_cli_util.h"
#include "convert_runner.h"
#include "convert_shards.h"
#include "convert_tasks.h"
#include "test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::Contains;
using testing::Gzip;
using testing::Idx;
using testing::Jpeg;
using testing::Png;
using testing::Put;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::Sluice;
using testing::Snapshot;
using testing::WriteFileOrDie;
using tools::ConvertTask;
using tools::ConvertTaskOptions;
using tools::DescribeTaskShards;
using tools::TaskShare;

// --- The pieces ---------------------------------------------------------------

TEST(ConvertTasksTest, ShareAndItsDescription) {
  EXPECT_EQ((TaskShare{3, 1}).ShardsOf(9), 3u);
  EXPECT_EQ((TaskShare{3, 2}).ShardsOf(8), 2u);  // 2, 5
  EXPECT_EQ((TaskShare{5, 4}).ShardsOf(3), 0u);
  EXPECT_EQ((TaskShare{1, 0}).ShardsOf(0), 0u);
  EXPECT_TRUE((TaskShare{3, 1}).Owns(7));
  EXPECT_FALSE((TaskShare{3, 1}).Owns(6));
  // Every shard has exactly one owner.
  for (size_t n : {1, 2, 3, 7}) {
    for (size_t s = 0; s < 20; ++s) {
      size_t owners = 0;
      for (size_t i = 0; i < n; ++i) owners += (TaskShare{n, i}).Owns(s) ? 1 : 0;
      EXPECT_EQ(owners, 1u);
    }
  }
  EXPECT_EQ(DescribeTaskShards({3, 1}, 9), "shards 1, 4, 7");
  EXPECT_EQ(DescribeTaskShards({3, 2}, 3), "shard 2");
  EXPECT_EQ(DescribeTaskShards({5, 4}, 3), "no shards");
  EXPECT_EQ(DescribeTaskShards({3, 1}, 100), "shards 1, 4, 7, ..., 97 (every 3rd)");
  EXPECT_EQ(DescribeTaskShards({2, 0}, 12), "shards 0, 2, 4, ..., 10 (every 2nd)");
  EXPECT_EQ(DescribeTaskShards({1, 0}, 10), "shards 0, 1, 2, ..., 9");
  EXPECT_EQ(DescribeTaskShards({21, 0}, 200), "shards 0, 21, 42, ..., 189 (every 21st)");
  EXPECT_EQ(DescribeTaskShards({12, 5}, 100), "shards 5, 17, 29, ..., 89 (every 12th)");
  EXPECT_EQ(DescribeTaskShards({4, 3}, 20), "shards 3, 7, 11, 15, 19");  // five: all listed
}

constexpr int64_t kNotGiven = -100;

ConvertTaskOptions Tasks(int64_t n, int64_t i, bool mpi = false) {
  ConvertTaskOptions o;
  o.mpi = mpi;
  o.num_tasks_given = n != kNotGiven;
  o.num_tasks = n;
  o.task_index_given = i != kNotGiven;
  o.task_index = i;
  return o;
}

TEST(ConvertTasksTest, OptionsAreCheckedTogether) {
  SLUICE_EXPECT_OK(tools::CheckConvertTaskOptions(Tasks(kNotGiven, kNotGiven)));
  SLUICE_EXPECT_OK(tools::CheckConvertTaskOptions(Tasks(3, 2)));
  SLUICE_EXPECT_OK(tools::CheckConvertTaskOptions(Tasks(kNotGiven, kNotGiven, true)));
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(kNotGiven, 1)),
                      StatusCode::kInvalidArgument, "--task-index needs --num-tasks");
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(2, kNotGiven)),
                      StatusCode::kInvalidArgument, "--num-tasks needs --task-index");
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(0, 0)), StatusCode::kInvalidArgument,
                      "--num-tasks 0");
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(3, 3)), StatusCode::kInvalidArgument,
                      "--task-index 3 is outside [0, 3)");
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(3, -2)), StatusCode::kInvalidArgument,
                      "--task-index -2 is outside [0, 3)");
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(-4, 0)), StatusCode::kInvalidArgument,
                      "--num-tasks -4: give the number of tasks");
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(2, 0, true)),
                      StatusCode::kInvalidArgument, "give it without --num-tasks");
  SLUICE_EXPECT_ERROR(tools::CheckConvertTaskOptions(Tasks(kNotGiven, 0, true)),
                      StatusCode::kInvalidArgument, "give it without --task-index");
}

TEST(ConvertTasksTest, TaskFromOptionsOrLauncher) {
  const ClusterResolver::Environment ompi = {{"OMPI_COMM_WORLD_RANK", "2"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"}};
  // Without --mpi the launcher's variables are not looked at.
  SLUICE_ASSERT_OK_AND_ASSIGN(ConvertTask one,
                              tools::ResolveConvertTask(Tasks(kNotGiven, kNotGiven), ompi));
  EXPECT_EQ(one.share.count, 1u);
  EXPECT_FALSE(one.split());
  EXPECT_TRUE(one.writes_labels());
  SLUICE_ASSERT_OK_AND_ASSIGN(ConvertTask given, tools::ResolveConvertTask(Tasks(3, 1), ompi));
  EXPECT_EQ(given.share.count, 3u);
  EXPECT_EQ(given.share.index, 1u);
  EXPECT_FALSE(given.writes_labels());
  EXPECT_EQ(tools::TaskName(given), "task 1 of 3");
  SLUICE_ASSERT_OK_AND_ASSIGN(ConvertTask mpi,
                              tools::ResolveConvertTask(Tasks(kNotGiven, kNotGiven, true), ompi));
  EXPECT_EQ(mpi.share.count, 4u);
  EXPECT_EQ(mpi.share.index, 2u);
  EXPECT_EQ(tools::TaskName(mpi), "task 2 of 4 (Open MPI rank)");
  SLUICE_ASSERT_OK_AND_ASSIGN(ConvertTask torchrun,
                              tools::ResolveConvertTask(Tasks(kNotGiven, kNotGiven, true),
                                                        {{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  EXPECT_EQ(torchrun.share.count, 2u);
  EXPECT_TRUE(torchrun.writes_labels());
  // No launcher: one task, and the caller is told ("none").
  SLUICE_ASSERT_OK_AND_ASSIGN(ConvertTask alone,
                              tools::ResolveConvertTask(Tasks(kNotGiven, kNotGiven, true), {}));
  EXPECT_FALSE(alone.split());
  EXPECT_EQ(alone.source, "none");
  // Variables that do not hold together name themselves.
  SLUICE_EXPECT_ERROR(
      tools::ResolveConvertTask(Tasks(kNotGiven, kNotGiven, true),
                                {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
      StatusCode::kInvalidArgument, "rank 3 is outside [0, 2)");
  SLUICE_EXPECT_ERROR(
      tools::ResolveConvertTask(Tasks(kNotGiven, kNotGiven, true), {{"OMPI_COMM_WORLD_RANK", "1"}}),
      StatusCode::kInvalidArgument, "OMPI_COMM_WORLD_SIZE");
  SLUICE_EXPECT_ERROR(tools::ResolveConvertTask(Tasks(2, 0, true), ompi),
                      StatusCode::kInvalidArgument, "--mpi");
}

// RunConversion with a share writes only the owned shards, and removes the
// temporaries of those only.
TEST(ConvertTasksTest, RunnerWritesOnlyTheOwnedShards) {
  ScratchDir dir;
  tools::ConvertJob job;
  job.prefix = dir.file("t");
  job.shards = tools::PlanShardsByCount(20, 7);
  job.task = {3, 1};
  job.workers = 2;
  job.progress = false;
  job.process = [](size_t i) -> Result<tools::RecordBytes> {
    if (i == 5) return Status::InvalidArgument("item 5 is bad");
    return tools::RecordBytes(fmt::format("record {}", i));
  };
  const std::string own_tmp = dir.file(".t-00004-of-00007.tfrecord.tmp-0000abcd");
  const std::string other_tmp = dir.file(".t-00002-of-00007.tfrecord.tmp-0000abcd");
  WriteFileOrDie(own_tmp, "left by an interrupted run");
  WriteFileOrDie(other_tmp, "another task is writing this");
  const tools::ConvertReport r = tools::RunConversion(job);
  SLUICE_ASSERT_OK(r.status);
  EXPECT_EQ(r.shards_total, 7u);
  EXPECT_EQ(r.shards_owned, 2u);
  EXPECT_EQ(r.shards_written, 2u);
  EXPECT_EQ(r.stale_temporaries, 1u);
  // Shards 1 ([2, 5)) and 4 ([11, 14)): 6 items; item 5 is in shard 2.
  EXPECT_EQ(r.items_processed, 6u);
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_FALSE(fs::exists(own_tmp));
  EXPECT_TRUE(fs::exists(other_tmp));
  std::vector<std::string> names;
  for (const auto& [name, bytes] : Snapshot(dir.path())) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{".t-00002-of-00007.tfrecord.tmp-0000abcd",
                                      "t-00001-of-00007.tfrecord", "t-00004-of-00007.tfrecord"}));
}

// --- The binary ---------------------------------------------------------------

// 22 images in 4 classes, JPEG and PNG, and one file that is not an image
// (skipped by whichever task owns its shard).
void MakeTaskFolder(const std::string& root) {
  for (int i = 0; i < 22; ++i) {
    const std::string name = root + "/c" + std::to_string(i % 4) + "/" + std::to_string(i);
    if (i % 3 == 0) {
      Put(name + ".png", Png(7, 5 + i % 4, 1, 500 + i));
    } else {
      Put(name + ".jpg", Jpeg(8 + i % 5, 9, 3, 500 + i));
    }
  }
  Put(root + "/c1/broken.jpg", "not an image");
}

// Runs `args` --num-tasks n --task-index i for i = n-1 down to 0 (so that
// task 0, which writes the labels, comes last), checking that no other task
// writes the labels file. Returns the tasks' exit codes, by index.
std::vector<int> RunTasks(const ScratchDir& dir, const std::string& args, const std::string& prefix,
                          int n) {
  std::vector<int> codes(static_cast<size_t>(n), -1);
  for (int i = n - 1; i >= 0; --i) {
    SCOPED_TRACE(fmt::format("task {} of {}", i, n));
    CliRun r = Sluice(dir, fmt::format("{} --num-tasks {} --task-index {}", args, n, i));
    codes[static_cast<size_t>(i)] = r.exit_code;
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err << r.out;
    if (n > 1) {
      EXPECT_TRUE(Contains(r.out, fmt::format("task {} of {}: ", i, n))) << r.out;
    }
    EXPECT_EQ(fs::exists(prefix + "-labels.txt"), i == 0) << r.out;
  }
  return codes;
}

TEST(ConvertTasksTest, ImageTasksWriteTheBytesOfOneProcess) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeTaskFolder(in);
  const std::string flags = " --shards 7 --shuffle --seed 11 --index -c gzip -j 2";
  CliRun one = Sluice(dir, "convert images " + in + " -o " + dir.file("one/t") + flags);
  ASSERT_EQ(one.exit_code, 3) << one.err;  // broken.jpg
  const auto expected = Snapshot(dir.file("one"));
  ASSERT_EQ(expected.size(), 17u);  // 7 shards, 7 indexes, the labels, manifest, lock file
  // The labels file counts the files listed, the skipped one included.
  EXPECT_EQ(expected.at("t-labels.txt"),
            "# id\tclass\timages\n0\tc0\t6\n1\tc1\t7\n2\tc2\t5\n3\tc3\t5\n");
  for (int n : {1, 2, 3}) {
    SCOPED_TRACE(n);
    const std::string out = dir.file(fmt::format("n{}", n));
    const std::vector<int> codes =
        RunTasks(dir, "convert images " + in + " -o " + out + "/t" + flags, out + "/t", n);
    EXPECT_EQ(std::count(codes.begin(), codes.end(), 3), 1);  // the one that met broken.jpg
    EXPECT_EQ(Snapshot(out), expected);
  }
  // The summary of one task.
  CliRun r = Sluice(dir, "convert images " + in + " -o " + dir.file("n3/t") + flags +
                             " --num-tasks 3 --task-index 1");
  EXPECT_TRUE(Contains(r.out, "task 1 of 3: shards 1, 4 of 7; the other tasks write the rest\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "shards: " + dir.file("n3/t-00001-of-00007.tfrecord.gz") + " ... " +
                                  dir.file("n3/t-00004-of-00007.tfrecord.gz") + "\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "labels: " + dir.file("n3/t-labels.txt") + " (task 0 writes it)"))
      << r.out;
}

// Under a launcher a rank that skipped files exits 0, not 3: mpirun would
// stop the other ranks. The files are still listed.
TEST(ConvertTasksTest, MpiRanksThatSkipFilesExitZero) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeTaskFolder(in);
  const std::string flags = " --shards 4 --shuffle --seed 1";
  ASSERT_EQ(Sluice(dir, "convert images " + in + " -o " + dir.file("one/t") + flags).exit_code, 3);
  int listed = 0;
  for (int rank = 0; rank < 2; ++rank) {
    CliRun r = Sluice(dir, "convert images " + in + " -o " + dir.file("mpi/t") + flags + " --mpi",
                      fmt::format("env -i OMPI_COMM_WORLD_RANK={} OMPI_COMM_WORLD_SIZE=2", rank));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (Contains(r.err, "c1/broken.jpg: not a JPEG or PNG file")) {
      ++listed;
      EXPECT_TRUE(
          Contains(r.err, fmt::format("task {} of 2 (Open MPI rank): skipped 1 image that", rank)))
          << r.err;
      EXPECT_TRUE(Contains(r.err, "exit status 0, not 3")) << r.err;
    }
  }
  EXPECT_EQ(listed, 1);
  EXPECT_EQ(Snapshot(dir.file("mpi")), Snapshot(dir.file("one")));
}

TEST(ConvertTasksTest, MoreTasksThanShards) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  MakeTaskFolder(in);
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(in)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  // About a third of the bytes per shard: 3 shards, for 5 tasks.
  const std::string flags =
      fmt::format(" --shard-size {} --shuffle", static_cast<double>(total) / 3 / 1e6 * 1.01);
  ASSERT_EQ(Sluice(dir, "convert images " + in + " -o " + dir.file("one/t") + flags).exit_code, 3);
  const auto expected = Snapshot(dir.file("one"));
  ASSERT_EQ(expected.size(), 6u);  // with the manifest and the lock file
  RunTasks(dir, "convert images " + in + " -o " + dir.file("n5/t") + flags, dir.file("n5/t"), 5);
  EXPECT_EQ(Snapshot(dir.file("n5")), expected);
  CliRun r = Sluice(dir, "convert images " + in + " -o " + dir.file("n5/t") + flags +
                             " --num-tasks 5 --task-index 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "task 4 of 5: no shards to write (there are 3)")) << r.out;
}

class IdxTasksTest : public ::testing::Test {
 protected:
  static constexpr int kN = 40, kRows = 6, kCols = 5;
  void SetUp() override {
    std::string pixels(kN * kRows * kCols, '\0');
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>(i * 29 + 3);
    std::string labels;
    for (int i = 0; i < kN; ++i) labels.push_back(static_cast<char>(i * 7 % 10));
    WriteFileOrDie(dir_.file("train-images-idx3-ubyte.gz"),
                   Gzip(Idx(0x803, {kN, kRows, kCols}, pixels)));
    WriteFileOrDie(dir_.file("train-labels-idx1-ubyte"), Idx(0x801, {kN}, labels));
  }
  std::string Args(const std::string& out, int shards = 5) const {
    return fmt::format("convert idx {} {} --fashion -o {} --shards {} --shuffle --seed 2 --index",
                       dir_.file("train-images-idx3-ubyte.gz"),
                       dir_.file("train-labels-idx1-ubyte"), dir_.file(out), shards);
  }
  ScratchDir dir_;
};

TEST_F(IdxTasksTest, TasksWriteTheBytesOfOneProcess) {
  CliRun one = Sluice(dir_, Args("one/m"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto expected = Snapshot(dir_.file("one"));
  ASSERT_EQ(expected.size(), 13u);  // with the manifest and the lock file
  for (int n : {1, 2, 3}) {
    SCOPED_TRACE(n);
    const std::string out = fmt::format("n{}", n);
    const std::vector<int> codes = RunTasks(dir_, Args(out + "/m"), dir_.file(out + "/m"), n);
    EXPECT_EQ(std::count(codes.begin(), codes.end(), 0), n);
    EXPECT_EQ(Snapshot(dir_.file(out)), expected);
  }
}

// --mpi reads the launcher's variables: each rank of a 3-process run.
TEST_F(IdxTasksTest, MpiTakesTheRankFromTheLauncher) {
  ASSERT_EQ(Sluice(dir_, Args("one/m")).exit_code, 0);
  const auto expected = Snapshot(dir_.file("one"));
  for (int rank = 2; rank >= 0; --rank) {
    CliRun r = Sluice(dir_, Args("mpi/m") + " --mpi",
                      fmt::format("env -i OMPI_COMM_WORLD_RANK={} OMPI_COMM_WORLD_SIZE=3", rank));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, fmt::format("task {} of 3 (Open MPI rank): ", rank))) << r.out;
    EXPECT_EQ(fs::exists(dir_.file("mpi/m-labels.txt")), rank == 0);
  }
  EXPECT_EQ(Snapshot(dir_.file("mpi")), expected);
  // Without a launcher, a normal run, with a note.
  CliRun r = Sluice(dir_, Args("alone/m") + " --mpi", "env -i");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "note: --mpi found no launcher variables")) << r.out;
  EXPECT_FALSE(Contains(r.out, "task 0")) << r.out;
  EXPECT_EQ(Snapshot(dir_.file("alone")), expected);
}

TEST_F(IdxTasksTest, BadTaskOptionsWriteNothing) {
  ScratchDir& dir = dir_;
  const std::string images_in = dir.file("in");
  MakeTaskFolder(images_in);
  struct Case {
    std::string flags, error;
  };
  const std::vector<Case> cases = {
      {"--task-index 1", "--task-index needs --num-tasks"},
      {"--num-tasks 2", "--num-tasks needs --task-index"},
      {"--num-tasks 3 --task-index 3", "--task-index 3 is outside [0, 3)"},
      {"--num-tasks 0 --task-index 0", "--num-tasks 0"},
      {"--mpi --num-tasks 2 --task-index 0", "--mpi takes the task count"},
      {"--num-tasks 2 --task-index -1", "--task-index -1 is outside [0, 2)"},
      {"--num-tasks -2 --task-index 0", "--num-tasks -2: give the number of tasks"},
      {"--num-tasks two --task-index 0", "--num-tasks"},
  };
  for (const std::string& command : {Args("bad/m"), "convert images " + images_in + " -o " +
                                                        dir.file("bad/t") + " --shards 4"}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(command + " " + c.flags);
      CliRun r = Sluice(dir, command + " " + c.flags);
      EXPECT_EQ(r.exit_code, 2) << r.out;
      EXPECT_TRUE(Contains(r.err, c.error)) << r.err;
      EXPECT_FALSE(fs::exists(dir.file("bad")));
    }
    // Launcher variables that do not hold together: an error, not usage.
    CliRun r =
        Sluice(dir, command + " --mpi", "env -i OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=2");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(Contains(r.err, "--mpi: ")) << r.err;
    EXPECT_TRUE(Contains(r.err, "OMPI_COMM_WORLD_RANK")) << r.err;
    EXPECT_FALSE(fs::exists(dir.file("bad")));
  }
  // --to-folder writes an image folder, not shards: no tasks there.
  CliRun r = Sluice(dir, "convert idx " + dir.file("train-images-idx3-ubyte.gz") + " " +
                             dir.file("train-labels-idx1-ubyte") + " --to-folder " +
                             dir.file("bad") + " --num-tasks 2 --task-index 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir.file("bad")));
  for (const char* sub : {"images", "idx"}) {
    CliRun help = Sluice(dir, std::string("convert ") + sub + " --help");
    EXPECT_EQ(help.exit_code, 0);
    for (const char* option : {"--num-tasks", "--task-index", "--mpi"}) {
      EXPECT_TRUE(Contains(help.out, option)) << sub << " " << option;
    }
  }
}

// A task resumes alone: it restores its own shards, byte for byte, and
// leaves every other task's file (and temporary) as it was.
TEST_F(IdxTasksTest, ATaskResumesAloneAndTouchesNoOtherTasksFiles) {
  const std::string args = Args("out/m", 9);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Sluice(dir_, fmt::format("{} --num-tasks 3 --task-index {}", args, i)).exit_code, 0);
  }
  const auto complete = Snapshot(dir_.file("out"));
  ASSERT_EQ(complete.size(), 21u);  // 9 shards, 9 indexes, the labels, manifest, lock file
  const std::string out = dir_.file("out");
  auto shard = [&](int s) { return fmt::format("{}/m-{:05d}-of-00009.tfrecord", out, s); };
  // Task 1 (shards 1, 4, 7) was interrupted: shard 4 is gone, shard 7 never
  // got past its temporary. Task 2 (2, 5, 8) is still writing shard 8.
  fs::remove(shard(4));
  fs::remove(shard(4) + ".idx");
  fs::remove(shard(7));
  fs::remove(shard(7) + ".idx");
  const std::string own_tmp = out + "/.m-00007-of-00009.tfrecord.tmp-1a2b3c4d";
  const std::string other_tmp = out + "/.m-00008-of-00009.tfrecord.tmp-5e6f7a8b";
  WriteFileOrDie(own_tmp, "partial");
  fs::remove(shard(8));
  fs::remove(shard(8) + ".idx");
  WriteFileOrDie(other_tmp, "task 2 at work");
  // Everything now there gets an old time, so that a rewrite shows.
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& e : fs::directory_iterator(out)) fs::last_write_time(e.path(), old_time);
  const auto before = Snapshot(out);

  CliRun r = Sluice(dir_, args + " --num-tasks 3 --task-index 1 --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "task 1 of 3: removed 1 temporary file left")) << r.out;
  EXPECT_TRUE(Contains(r.out, "task 1 of 3: converted 9 images into 2 shards")) << r.out;
  EXPECT_TRUE(Contains(r.out, "task 1 of 3: resumed: 1 of 3 shards were complete")) << r.out;
  const auto after = Snapshot(out);
  for (int s : {4, 7}) {
    const std::string name = fs::path(shard(s)).filename().string();
    EXPECT_EQ(after.at(name), complete.at(name)) << name;
    EXPECT_EQ(after.at(name + ".idx"), complete.at(name + ".idx")) << name;
  }
  EXPECT_FALSE(fs::exists(own_tmp));
  EXPECT_TRUE(fs::exists(other_tmp));  // task 2's, untouched
  EXPECT_FALSE(fs::exists(shard(8)));  // not task 1's to write
  for (const auto& [name, bytes] : before) {
    if (name == fs::path(own_tmp).filename()) continue;
    SCOPED_TRACE(name);
    EXPECT_EQ(after.at(name), bytes);
    // The manifest is every task's: task 1 records its shards in it again
    // (the same bytes, a new file).
    if (name == "m-manifest.json") continue;
    EXPECT_EQ(fs::last_write_time(out + "/" + name), old_time);
  }

  // Task 2 then finishes its own: all is as an uninterrupted run.
  r = Sluice(dir_, args + " --num-tasks 3 --task-index 2 --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Snapshot(out), complete);
}

}  // namespace
}  // namespace sluice
