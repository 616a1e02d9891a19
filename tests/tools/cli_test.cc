// Runs the real `sluice` binary and checks its output, exit status and files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <bit>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "example_json.h"
#include "sluice/records/proto/example.pb.h"
#include "test_util.h"
#include "tfrecord_test_util.h"

namespace sluice {
namespace {

using testing::GoldenLengths;
using testing::GoldenPayload;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;
using testing::WriteFileOrDie;

struct CliRun {
  int exit_code;
  std::string out;
  std::string err;
};

CliRun Sluice(const ScratchDir& dir, const std::string& args, const std::string& input = "") {
  WriteFileOrDie(dir.file("stdin"), input);
  const std::string cmd = std::string(SLUICE_BINARY) + " " + args + " < " + dir.file("stdin") +
                          " > " + dir.file("stdout") + " 2> " + dir.file("stderr");
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFileOrDie(dir.file("stdout")),
          ReadFileOrDie(dir.file("stderr"))};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string Hex(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

TEST(CliTest, HelpForEveryCommand) {
  ScratchDir dir;
  CliRun r = Sluice(dir, "--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"cat", "write", "count", "verify", "index"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
    CliRun sub = Sluice(dir, std::string(cmd) + " --help");
    EXPECT_EQ(sub.exit_code, 0) << cmd;
    EXPECT_NE(sub.out.find("--compression"), std::string::npos) << cmd << sub.out;
  }
  CliRun v = Sluice(dir, "--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("sluice "), std::string::npos);
}

TEST(CliTest, UsageErrorsExitTwo) {
  ScratchDir dir;
  EXPECT_EQ(Sluice(dir, "").exit_code, 2);
  EXPECT_EQ(Sluice(dir, "frobnicate").exit_code, 2);
  CliRun missing = Sluice(dir, "cat /nonexistent.tfrecord");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent.tfrecord"), std::string::npos) << missing.err;
  EXPECT_EQ(Sluice(dir, "cat -c lz4 " + TestDataPath("tf/records_none.tfrecord")).exit_code, 2);
}

TEST(CliTest, CatPrintsEveryRecordOfEveryCompression) {
  ScratchDir dir;
  for (const char* c : {"none", "zlib", "gzip"}) {
    const std::string file = TestDataPath(std::string("tf/records_") + c + ".tfrecord");
    CliRun r = Sluice(dir, "cat --format hex " + file);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = Lines(r.out);
    ASSERT_EQ(lines.size(), GoldenLengths().size()) << c;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i], Hex(GoldenPayload(i, GoldenLengths()[i]))) << c << " record " << i;
    }
    CliRun limited = Sluice(dir, "cat --skip 2 -n 3 " + file);
    EXPECT_EQ(Lines(limited.out).size(), 3u);
  }
  CliRun escaped = Sluice(dir, "cat -n 3 " + TestDataPath("tf/records_none.tfrecord"));
  EXPECT_EQ(Lines(escaped.out)[1], "\\x1f");
  EXPECT_EQ(Lines(escaped.out)[2], ">ELSZahov}\\x84");
}

// examples.jsonl is MessageToJson() output from TensorFlow's python protobuf.
TEST(CliTest, CatJsonMatchesTensorFlowsJson) {
  ScratchDir dir;
  CliRun r = Sluice(dir, "cat --json " + TestDataPath("tf/examples.tfrecord"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> ours = Lines(r.out);
  std::vector<std::string> theirs = Lines(ReadFileOrDie(TestDataPath("tf/examples.jsonl")));
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    // Same message (whitespace differs: python pads ", " and ": ").
    auto a = tools::JsonToSerialized(ours[i], tools::ProtoType::kExample);
    auto b = tools::JsonToSerialized(theirs[i], tools::ProtoType::kExample);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_EQ(*a, *b) << "example " << i << "\nours:   " << ours[i] << "\ntheirs: " << theirs[i];
    // And the same text: python's MessageToJson(sort_keys=True) minus its spaces
    // (the golden strings hold no spaces).
    std::string compact = theirs[i];
    std::erase(compact, ' ');
    EXPECT_EQ(ours[i], compact);
  }
}

// float_json.txt: python protobuf's json_format text for 2000 float32 values.
TEST(CliTest, FloatsPrintAsPythonProtobufPrintsThem) {
  std::istringstream in(ReadFileOrDie(TestDataPath("tf/float_json.txt")));
  int checked = 0;
  for (std::string hex, expected; in >> hex >> expected; ++checked) {
    const uint32_t bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
    proto::Example ex;
    (*ex.mutable_features()->mutable_feature())["x"].mutable_float_list()->add_value(
        std::bit_cast<float>(bits));
    auto json = tools::SerializedToJson(ex.SerializeAsString(), tools::ProtoType::kExample);
    ASSERT_TRUE(json.ok()) << json.status();
    const size_t open = json->find('['), close = json->find(']');
    EXPECT_EQ(json->substr(open + 1, close - open - 1), expected) << "bits " << hex;
  }
  EXPECT_EQ(checked, 2007);
}

TEST(CliTest, WriteFromJsonIsByteIdenticalToTensorFlow) {
  ScratchDir dir;
  const std::string jsonl = ReadFileOrDie(TestDataPath("tf/examples.jsonl"));
  CliRun r = Sluice(dir, "write --index " + dir.file("out.tfrecord"), jsonl + "\n\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 6 records"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFileOrDie(dir.file("out.tfrecord")),
            ReadFileOrDie(TestDataPath("tf/examples.tfrecord")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("out.tfrecord.idx")));
  // .gz picks gzip, and cat reads it back to the same JSON.
  ASSERT_EQ(Sluice(dir, "write " + dir.file("out.tfrecord.gz"), jsonl).exit_code, 0);
  EXPECT_EQ(ReadFileOrDie(dir.file("out.tfrecord.gz")).substr(0, 2), "\x1f\x8b");
  CliRun back = Sluice(dir, "cat --json " + dir.file("out.tfrecord.gz"));
  CliRun orig = Sluice(dir, "cat --json " + TestDataPath("tf/examples.tfrecord"));
  EXPECT_EQ(back.out, orig.out);
}

TEST(CliTest, WriteRejectsBadJsonAndPublishesNothing) {
  ScratchDir dir;
  CliRun r = Sluice(dir, "write " + dir.file("bad.tfrecord"),
                    "{\"features\": {}}\n{\"features\": {\"feature\": {\"x\": 5}}}\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stdin line 2"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.tfrecord")));
  // Only stdin, stdout and stderr: no temporary file left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 3);
}

TEST(CliTest, CountVerifyIndex) {
  ScratchDir dir;
  const std::string none = TestDataPath("tf/records_none.tfrecord");
  const std::string gz = TestDataPath("tf/records_gzip.tfrecord");
  CliRun count = Sluice(dir, "count " + none + " " + gz);
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(Lines(count.out), (std::vector<std::string>{"8\t" + none, "8\t" + gz, "16\ttotal"}));

  CliRun verify = Sluice(dir, "verify " + none + " " + gz);
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find(gz + ": OK, 8 records"), std::string::npos) << verify.out;

  // Flip one data byte of record 4 (offset 16+17+27+116 = 176).
  std::string bytes = ReadFileOrDie(none);
  bytes[176 + 12 + 500] ^= 0x40;
  WriteFileOrDie(dir.file("bad.tfrecord"), bytes);
  CliRun bad = Sluice(dir, "verify " + none + " " + dir.file("bad.tfrecord"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find(dir.file("bad.tfrecord") + ": record 4 at offset 176"), std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("data checksum"), std::string::npos) << bad.err;

  WriteFileOrDie(dir.file("copy.tfrecord"), ReadFileOrDie(none));
  CliRun index = Sluice(dir, "index " + dir.file("copy.tfrecord"));
  ASSERT_EQ(index.exit_code, 0) << index.err;
  // The tfrecord package's lines, then sluice's trailer (a comment to them).
  const std::string idx = ReadFileOrDie(dir.file("copy.tfrecord.idx"));
  EXPECT_EQ(idx.substr(0, idx.find('#')), ReadFileOrDie(none + ".idx"));
  EXPECT_NE(idx.find("# sluice-index data-bytes=136779 data-crc32c="), std::string::npos) << idx;
  CliRun bad_index = Sluice(dir, "index " + dir.file("bad.tfrecord"));
  EXPECT_EQ(bad_index.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.tfrecord.idx")));
}

TEST(CliTest, CatJsonOnNonExampleNamesTheRecord) {
  ScratchDir dir;
  CliRun r = Sluice(dir, "cat --json " + TestDataPath("tf/records_none.tfrecord"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("record 1 at offset 16: not a valid Example"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sluice
