// Crash safety of TFRecordWriter with write_index, tested by killing: a
// child process rewrites one file over and over (versions of different
// record counts and sizes, every compression), each time with its .idx, and
// is sent SIGKILL at random moments. After every kill the file is a whole
// version, and an index beside it describes exactly that file (the publish
// order: the old index goes, the data is renamed, the new index follows),
// so that LoadFor, CheckAgainst and CountRecords never pair data with
// another version's index.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ScratchDir;

constexpr int kKills = 60;

// Version v: v % 7 + 1 records of 50000 + 17 * (v % 50) bytes (writing them
// is most of a version's time, while the previous index is still there).
int RecordsOf(uint64_t v) { return static_cast<int>(v % 7) + 1; }

// Until killed; it dies with the test (PR_SET_PDEATHSIG), and gives up
// after a minute in any case, so that no writer outlives a test killed by a
// debugger or a timeout.
[[noreturn]] void RewriteForever(const std::string& path, Compression c, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(5);  // the test already ended
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  for (uint64_t v = 1; std::chrono::steady_clock::now() < give_up; ++v) {
    TFRecordWriterOptions opts;
    opts.compression = c;
    opts.write_index = true;
    Result<TFRecordWriter> w = TFRecordWriter::Open(path, opts);
    if (!w.ok()) _exit(2);
    const std::string payload(50000 + 17 * (v % 50), static_cast<char>('a' + v % 26));
    for (int i = 0; i < RecordsOf(v); ++i) {
      if (!w->Write(payload).ok()) _exit(3);
    }
    if (!w->Close().ok()) _exit(4);
    // A pause between versions, as a real writer has: kills then also land
    // while the index is there (publishing a version is mostly the data's
    // rename, during which there is none).
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  _exit(6);
}

TEST(WriterKillTest, KilledAnywhereTheIndexBesideTheFileDescribesIt) {
  const uint64_t seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> us(200, 30000);
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    ScratchDir dir;
    const std::string path = dir.file("f.tfrecord");
    int with_index = 0, without = 0, no_file = 0;
    for (int k = 0; k < kKills; ++k) {
      const pid_t parent = ::getpid();
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) RewriteForever(path, c, parent);
      std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
      ::kill(pid, SIGKILL);
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFSIGNALED(status)) << "the writer failed: exit " << WEXITSTATUS(status);
      if (!std::filesystem::exists(path)) {  // killed before its first version
        ++no_file;
        continue;
      }
      SCOPED_TRACE(std::string(CompressionName(c)) + ", kill " + std::to_string(k));
      // The file is a whole version...
      TFRecordReaderOptions read;
      read.compression = c;
      SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader, TFRecordReader::Open(path, read));
      uint64_t records = 0;
      while (true) {
        SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<RecordFrame> f, reader.NextFrame());
        if (!f) break;
        ++records;
      }
      EXPECT_GE(records, 1u);
      // ... and an index beside it is its own.
      if (!std::filesystem::exists(RecordIndex::PathFor(path))) {
        ++without;
        continue;
      }
      ++with_index;
      SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::LoadFor(path));
      SLUICE_EXPECT_OK(index.CheckAgainst(path));
      SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndexData now, DigestDataFile(path));
      EXPECT_EQ(index.data(), now);
      EXPECT_EQ(index.size(), records);
      SLUICE_ASSERT_OK_AND_ASSIGN(RecordCount count, CountRecordsOf(path));
      EXPECT_TRUE(count.from_index);
      EXPECT_EQ(count.records, records);
    }
    // Some kills leave a file with its index, so that the pairing was
    // checked (on a busy machine most land while no index is there: between
    // the removal of the old one and the rename of the new one).
    std::printf("%s: %d kills with the index there, %d without, %d before the first file\n",
                std::string(CompressionName(c)).c_str(), with_index, without, no_file);
    EXPECT_GE(with_index, kKills / 10) << CompressionName(c) << ": " << without << " without, "
                                       << no_file << " before the first file";
  }
}

}  // namespace
}  // namespace sluice
