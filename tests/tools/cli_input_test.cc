// `sluice` on input a reviewer tried (issue 37): malformed JSON for `write`,
// records that inflate to hundreds of MB, pipes instead of files, a Ctrl-C
// mid-write, unreadable files, and the wording of the results.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "child_process.h"
#include "sanitizer_slowdown.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;
using testing::WriteFileOrDie;

struct ShellRun {
  int exit_code;
  std::string out, err;
};

// Runs `shell` (a /bin/sh command line in which $S is the sluice binary),
// stdout and stderr captured.
ShellRun Shell(const ScratchDir& dir, const std::string& shell) {
  const std::string cmd = "S=" + std::string(SLUICE_BINARY) + "; (" + shell + ") > " +
                          dir.file("stdout") + " 2> " + dir.file("stderr");
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFileOrDie(dir.file("stdout")),
          ReadFileOrDie(dir.file("stderr"))};
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string Example(const std::string& value_json) {
  return R"({"features":{"feature":{"x":{"int64List":{"value":)" + value_json + "}}}}}\n";
}

// Item 6: nested arrays were flattened, a bare scalar taken as a list.
TEST(CliInputTest, WriteRejectsWhatIsNotAnExampleInCatsLayout) {
  ScratchDir dir;
  WriteFileOrDie(dir.file("good.json"), Example(R"(["1","2"])"));
  ASSERT_EQ(
      Shell(dir, "$S write " + dir.file("ok.tfrecord") + " < " + dir.file("good.json")).exit_code,
      0);
  struct Case {
    std::string json, message;
  } cases[] = {
      {Example(R"([["1","2"],["3"]])"), "$.features.feature[\"x\"].int64List.value[0]: an array"},
      {Example(R"("1")"), "$.features.feature[\"x\"].int64List.value: a string where a list"},
      {Example(R"({"a":1})"), "value: an object where a list of values belongs"},
      {std::string(100000, '[') + std::string(100000, ']') + "\n", "$: an array where an object"},
      {Example(std::string(5000, '[') + "\"1\"" + std::string(5000, ']')), "an array inside"},
  };
  for (const Case& c : cases) {
    WriteFileOrDie(dir.file("in.json"), "\n" + c.json);
    const ShellRun r =
        Shell(dir, "$S write " + dir.file("bad.tfrecord") + " < " + dir.file("in.json"));
    EXPECT_EQ(r.exit_code, 1) << c.json.substr(0, 80);
    EXPECT_TRUE(Has(r.err, "stdin line 2")) << r.err;
    EXPECT_TRUE(Has(r.err, c.message)) << r.err;
    EXPECT_FALSE(fs::exists(dir.file("bad.tfrecord")));
  }
  // A SequenceExample's feature lists are lists of features.
  WriteFileOrDie(
      dir.file("seq.json"),
      R"({"featureLists":{"featureList":{"t":{"feature":[{"int64List":{"value":["1"]}}]}}}})"
      "\n");
  EXPECT_EQ(Shell(dir, "$S write --type sequence_example " + dir.file("s.tfrecord") + " < " +
                           dir.file("seq.json"))
                .exit_code,
            0);
  WriteFileOrDie(dir.file("seq.json"),
                 R"({"featureLists":{"featureList":{"t":{"feature":{"int64List":{}}}}}})"
                 "\n");
  const ShellRun r = Shell(dir, "$S write --type sequence_example " + dir.file("s2.tfrecord") +
                                    " < " + dir.file("seq.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r.err,
                  "$.featureLists.featureList[\"t\"].feature: an object where a list of "
                  "features belongs"))
      << r.err;
}

// A GZIP TFRecord of one record that inflates to `mb` MB of zeros (its
// length CRC and data CRC valid), `~mb` KB on disk.
void WriteGzipBomb(const std::string& path, int mb) {
  TFRecordWriterOptions opts;
  opts.compression = Compression::kGzip;
  opts.compression_level = 9;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
  SLUICE_ASSERT_OK(w.Write(std::string(size_t(mb) << 20, '\0')));
  SLUICE_ASSERT_OK(w.Close());
}

// Item 7: `count` and `verify` held the whole record (794 MB of RSS for a
// 306 KB file). Under a 192 MiB address-space limit they still work.
TEST(CliInputTest, CountAndVerifyStreamRecordsTheyDoNotKeep) {
  ScratchDir dir;
  const std::string bomb = dir.file("bomb.tfrecord.gz");
  WriteGzipBomb(bomb, 320);
  ASSERT_LT(fs::file_size(bomb), 1u << 20);
  // Under a sanitizer the limit would measure ASan's shadow memory.
  const std::string limit = testing::kUnderSanitizer ? "" : "ulimit -v 196608; ";
  ShellRun r = Shell(dir, limit + "$S count " + bomb);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\t" + bomb + "\n");
  r = Shell(dir, limit + "$S verify " + bomb);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "OK, 1 record, 335544320 bytes")) << r.out;
  r = Shell(dir, limit + "$S index " + bomb);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "1 record\n")) << r.out;
  // cat must hold the record to print it: a clear error, not a crash.
  if (!testing::kUnderSanitizer) {
    r = Shell(dir, limit + "$S cat " + bomb + " > /dev/null");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_FALSE(Has(r.err, "terminate called")) << r.err;
  }
}

// Item 18: pipes, FIFOs and "-".
TEST(CliInputTest, PipesAndStandardStreams) {
  ScratchDir dir;
  const std::string none = TestDataPath("tf/records_none.tfrecord");
  const std::string gzip = TestDataPath("tf/records_gzip.tfrecord");
  const ShellRun want = Shell(dir, "$S cat --format hex " + none);
  ASSERT_EQ(want.exit_code, 0) << want.err;
  for (const std::string& file : {none, gzip}) {
    SCOPED_TRACE(file);
    ShellRun r = Shell(dir, "cat " + file + " | $S cat --format hex -");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, want.out);
    r = Shell(dir, "cat " + file + " | $S cat --format hex /dev/stdin");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, want.out);
    r = Shell(dir, "cat " + file + " | $S count -");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "8\t-\n");
    r = Shell(dir, "cat " + file + " | $S verify /dev/stdin");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Has(r.out, "OK, 8 records")) << r.out;
  }
  // A FIFO with a writer.
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ShellRun r = Shell(dir, "cat " + none + " > " + fifo + " & $S count " + fifo + "; wait");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "8\t" + fifo + "\n");
  // write - | cat -: the records go to standard output, the summary to stderr.
  WriteFileOrDie(dir.file("in.json"), R"({"features":{}})"
                                      "\n"
                                      R"({"features":{}})"
                                      "\n");
  r = Shell(dir, "cd " + dir.path() + " && $S write - < in.json | $S count -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2\t-\n");
  EXPECT_TRUE(Has(r.err, "wrote 2 records")) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("-")));  // not a file named "-"
  r = Shell(dir, "$S write --index - < " + dir.file("in.json") + " > /dev/null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r.err, "cannot have an index")) << r.err;
  // An index of a stream is refused with a reason.
  r = Shell(dir, "cat " + none + " | $S index -");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r.err, "stream")) << r.err;
}

// Item 19: Ctrl-C in `write` leaves nothing behind, and a temporary file
// that SIGKILL left is removed by the next write of the same file.
TEST(CliInputTest, InterruptedWriteLeavesNoTemporaryFile) {
  ScratchDir dir;
  const std::string fifo = dir.file("in");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string out = dir.file("out/x.tfrecord");
  fs::create_directories(dir.file("out"));
  WriteFileOrDie(out, "old");
  for (int sig : {SIGINT, SIGKILL}) {
    SCOPED_TRACE(sig);
    // stdin: the FIFO, held open for writing by this process (O_RDWR does
    // not wait for a reader), one line in it, then nothing more.
    const int writer = ::open(fifo.c_str(), O_RDWR);
    ASSERT_GE(writer, 0);
    const std::string line = "{\"features\":{}}\n";
    ASSERT_EQ(::write(writer, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    const std::string cmd = "exec " + std::string(SLUICE_BINARY) + " write " + out + " < " + fifo;
    ChildProcess child({"/bin/sh", "-c", cmd}, dir.file("log"));
    // Wait until its temporary file exists.
    bool started = false;
    for (int i = 0; i < 500 && !started; ++i) {
      for (const auto& e : fs::directory_iterator(dir.file("out"))) {
        if (e.path().filename().string().starts_with(".x.tfrecord.tmp-")) started = true;
      }
      if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(started);
    child.Kill(sig);
    EXPECT_EQ(child.Wait(), 128 + sig);
    ::close(writer);
    EXPECT_EQ(ReadFileOrDie(out), "old");  // untouched
    size_t temporaries = 0;
    for (const auto& e : fs::directory_iterator(dir.file("out"))) {
      temporaries += e.path().filename().string().starts_with(".x.tfrecord.tmp-");
    }
    EXPECT_EQ(temporaries, sig == SIGINT ? 0u : 1u);
    if (sig == SIGINT) {
      // After 1 line, or 0 when the signal came before the line was read.
      EXPECT_TRUE(Has(ReadFileOrDie(dir.file("log")), "interrupted after "))
          << ReadFileOrDie(dir.file("log"));
    }
  }
  // The next write removes what SIGKILL left.
  WriteFileOrDie(dir.file("one.json"), "{\"features\":{}}\n");
  const ShellRun r = Shell(dir, "$S write " + out + " < " + dir.file("one.json"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "removed 1 temporary file")) << r.err;
  for (const auto& e : fs::directory_iterator(dir.file("out"))) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << e.path();
  }
}

// Item 17: verify calls an unreadable file unreadable, not corrupt; counts
// and plurals read right.
TEST(CliInputTest, VerifyTellsUnreadableFromCorrupt) {
  ScratchDir dir;
  // A socket: it exists, but cannot be opened, even by root.
  const std::string sock = dir.file("sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string one = dir.file("one.tfrecord");
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(one));
    SLUICE_ASSERT_OK(w.Write("abc"));
    SLUICE_ASSERT_OK(w.Close());
  }
  std::string corrupt = ReadFileOrDie(one);
  corrupt[13] ^= 1;
  WriteFileOrDie(dir.file("bad.tfrecord"), corrupt + ReadFileOrDie(one) + corrupt);
  const ShellRun r = Shell(dir, "$S verify " + one + " " + sock + " " + dir.file("bad.tfrecord"));
  ::close(fd);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r.out, one + ": OK, 1 record, 3 bytes")) << r.out;
  EXPECT_TRUE(Has(r.err, sock + ": UNREADABLE: ")) << r.err;
  EXPECT_FALSE(Has(r.err, sock + ": CORRUPT")) << r.err;
  EXPECT_TRUE(Has(r.err, "bad.tfrecord: CORRUPT (2 bad records, 1 good one); the first: "))
      << r.err;
  EXPECT_TRUE(Has(r.err, "2 of 3 files failed verification (1 corrupt, 1 unreadable)")) << r.err;
}

// Item 5: `count` said 5 for a 1-record file rewritten at the same size
// beside its old index, and 2 for a forged index whose sizes add up.
TEST(CliInputTest, CountDoesNotTrustAnIndexThatDoesNotDescribeTheFile) {
  ScratchDir dir;
  const std::string path = dir.file("same.tfrecord");
  auto write = [&](int n, size_t length, bool index) {
    TFRecordWriterOptions opts;
    opts.write_index = index;
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
    for (int i = 0; i < n; ++i) SLUICE_ASSERT_OK(w.Write(std::string(length, 'r')));
    SLUICE_ASSERT_OK(w.Close());
  };
  write(5, 100, true);
  const std::string old_index = ReadFileOrDie(path + ".idx");
  write(1, 5 * 116 - 16, false);
  WriteFileOrDie(path + ".idx", old_index);
  ShellRun r = Shell(dir, "$S count " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\t" + path + "\n");
  EXPECT_TRUE(Has(r.err, "note: " + path + ".idx: stale index: entry 0 says a record of 100 bytes"))
      << r.err;
  write(2, 100, false);
  WriteFileOrDie(path + ".idx", "0 27\n27 205\n");
  r = Shell(dir, "$S count " + path);
  EXPECT_EQ(r.out, "2\t" + path + "\n");
}

}  // namespace
}  // namespace sluice
