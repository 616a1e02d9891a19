// TFRecord reader and writer: round trips, byte-compatibility with files
// TensorFlow wrote, and reader behaviour around buffers and growing files.
#include <gtest/gtest.h>

#include <filesystem>

#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_reader.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"
#include "tfrecord_test_util.h"

namespace sluice {
namespace {

using testing::GoldenLengths;
using testing::GoldenPayload;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;

std::vector<std::string> ReadAll(TFRecordReader& reader) {
  std::vector<std::string> out;
  while (true) {
    Result<std::optional<Record>> r = reader.Next();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) break;
    out.emplace_back((*r)->data);
  }
  return out;
}

std::vector<std::string> ReadAllFromBytes(std::string bytes, TFRecordReaderOptions opts = {}) {
  Result<TFRecordReader> reader =
      TFRecordReader::Open(NewMemoryFile("mem", std::move(bytes)), opts);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? ReadAll(*reader) : std::vector<std::string>{};
}

std::vector<std::string> GoldenRecords() {
  std::vector<std::string> v;
  for (size_t i = 0; i < GoldenLengths().size(); ++i)
    v.push_back(GoldenPayload(i, GoldenLengths()[i]));
  return v;
}

class CompressionTest : public ::testing::TestWithParam<Compression> {};

INSTANTIATE_TEST_SUITE_P(All, CompressionTest,
                         ::testing::Values(Compression::kNone, Compression::kZlib,
                                           Compression::kGzip),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

// Files written by tf.io.TFRecordWriter (tests/data/make_golden.py).
TEST_P(CompressionTest, ReadsFilesTensorFlowWrote) {
  const std::string path =
      TestDataPath("tf/records_" + std::string(CompressionName(GetParam())) + ".tfrecord");
  for (Compression c : {GetParam(), Compression::kAuto}) {
    TFRecordReaderOptions opts;
    opts.compression = c;
    opts.buffer_size = 4096;  // records cross many buffer boundaries
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader, TFRecordReader::Open(path, opts));
    EXPECT_EQ(reader.compression(), GetParam());
    EXPECT_EQ(ReadAll(reader), GoldenRecords());
  }
}

TEST_P(CompressionTest, WritesBytesIdenticalToTensorFlow) {
  ScratchDir dir;
  const std::string ours = testing::WriteRecordsToBytes(dir.path(), GoldenRecords(), GetParam());
  const std::string theirs = ReadFileOrDie(
      TestDataPath("tf/records_" + std::string(CompressionName(GetParam())) + ".tfrecord"));
  ASSERT_EQ(ours.size(), theirs.size());
  EXPECT_TRUE(ours == theirs);
}

TEST_P(CompressionTest, RoundTripManyRecordsSmallBuffers) {
  ScratchDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 2000; ++i) records.push_back(GoldenPayload(i, (i * 37) % 3000));
  const std::string path = dir.file("many.tfrecord");
  TFRecordWriterOptions wopts;
  wopts.compression = GetParam();
  wopts.buffer_size = 5000;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, wopts));
  for (const auto& r : records) SLUICE_ASSERT_OK(w.Write(r));
  EXPECT_EQ(w.records_written(), records.size());
  SLUICE_ASSERT_OK(w.Close());
  for (size_t buffer : {size_t{1}, size_t{4096}, size_t{100000}, size_t{1} << 20}) {
    TFRecordReaderOptions ropts;
    ropts.buffer_size = buffer;
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader, TFRecordReader::Open(path, ropts));
    EXPECT_EQ(ReadAll(reader), records) << "buffer " << buffer;
  }
}

TEST_P(CompressionTest, HeldRecordsStayValidAcrossRefills) {
  ScratchDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 500; ++i) records.push_back(GoldenPayload(i, 100 + i % 700));
  const std::string bytes = testing::WriteRecordsToBytes(dir.path(), records, GetParam());
  TFRecordReaderOptions opts;
  opts.buffer_size = 4096;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader,
                              TFRecordReader::Open(NewMemoryFile("mem", bytes), opts));
  std::vector<Record> held;
  while (true) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Record> r, reader.Next());
    if (!r) break;
    EXPECT_EQ(r->number, held.size());
    held.push_back(std::move(*r));
  }
  ASSERT_EQ(held.size(), records.size());
  for (size_t i = 0; i < held.size(); ++i) EXPECT_EQ(held[i].data, records[i]) << i;
}

TEST_P(CompressionTest, FlushMakesRecordsReadableWhileWriting) {
  ScratchDir dir;
  const std::string path = dir.file("growing.tfrecord");
  TFRecordWriterOptions wopts;
  wopts.compression = GetParam();
  wopts.atomic = false;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, wopts));
  SLUICE_ASSERT_OK(w.Write("first"));
  SLUICE_ASSERT_OK(w.Flush());
  TFRecordReaderOptions ropts;
  ropts.compression = GetParam();
  ropts.allow_truncated_tail = true;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader, TFRecordReader::Open(path, ropts));
  EXPECT_EQ(ReadAll(reader), std::vector<std::string>{"first"});
  SLUICE_ASSERT_OK(w.Write("second"));
  SLUICE_ASSERT_OK(w.Write(std::string(10000, 'x')));
  SLUICE_ASSERT_OK(w.Flush());
  EXPECT_EQ(ReadAll(reader), (std::vector<std::string>{"second", std::string(10000, 'x')}));
  SLUICE_ASSERT_OK(w.Close());
  EXPECT_TRUE(ReadAll(reader).empty());
}

TEST(TFRecordTest, ConcatenatedGzipMembersAreOneStream) {
  TFRecordReaderOptions opts;
  opts.buffer_size = 100;
  SLUICE_ASSERT_OK_AND_ASSIGN(
      TFRecordReader reader,
      TFRecordReader::Open(TestDataPath("tf/records_gzip_concat.tfrecord"), opts));
  EXPECT_EQ(reader.compression(), Compression::kGzip);
  EXPECT_EQ(ReadAll(reader), GoldenRecords());
}

// The two-record event file from tensorboard/data/server/tf_record.rs
// (tf.summary.scalar("accuracy", 0.99, step=77)).
TEST(TFRecordTest, TensorBoardEventFileGoldenBytes) {
  const std::string r1(
      "\x09\x00\x00\x80\x38\x99\xd6\xd7\x41\x1a\x0d"
      "brain.Event:2",
      24);
  const std::string r2(
      "\x09\xc4\x05\xb7\x3d\x99\xd6\xd7\x41\x10\x4d\x2a\x25\x0a\x23\x0a\x08"
      "accuracy"
      "\x42\x0a\x08\x01\x12\x00\x22\x04\xa4\x70\x7d\x3f\x4a\x0b\x0a\x09\x0a\x07"
      "scalars",
      50);
  std::string file;
  file += std::string("\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7f\x4b\x22", 12) + r1 +
          std::string("\x12\x4b\x36\xab", 4);
  file += std::string("\x32\x00\x00\x00\x00\x00\x00\x00\x24\x19\x56\xec", 12) + r2 +
          std::string("\xa5\x5b\x64\x33", 4);
  EXPECT_EQ(ReadAllFromBytes(file), (std::vector<std::string>{r1, r2}));
  ScratchDir dir;
  EXPECT_EQ(testing::WriteRecordsToBytes(dir.path(), {r1, r2}, Compression::kNone), file);
}

TEST(TFRecordTest, EmptyFileHasNoRecords) {
  for (Compression c : {Compression::kAuto, Compression::kNone, Compression::kGzip}) {
    TFRecordReaderOptions opts;
    opts.compression = c;
    EXPECT_TRUE(ReadAllFromBytes("", opts).empty());
  }
}

TEST(TFRecordTest, MissingFileIsNotFound) {
  SLUICE_EXPECT_ERROR(TFRecordReader::Open("/nonexistent/x.tfrecord"), StatusCode::kNotFound,
                      "/nonexistent/x.tfrecord");
}

TEST(TFRecordTest, AtomicWriterPublishesOnlyOnClose) {
  ScratchDir dir;
  const std::string path = dir.file("a.tfrecord");
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path));
    SLUICE_ASSERT_OK(w.Write("x"));
    SLUICE_ASSERT_OK(w.Flush());
    EXPECT_FALSE(std::filesystem::exists(path));
    // Destroyed without Close(): nothing is published and no temp file is left.
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path));
  SLUICE_ASSERT_OK(w.Write("y"));
  SLUICE_ASSERT_OK(w.Close());
  EXPECT_TRUE(std::filesystem::exists(path));
  SLUICE_EXPECT_ERROR(w.Write("z"), StatusCode::kFailedPrecondition, "closed");
  SLUICE_EXPECT_ERROR(w.Close(), StatusCode::kFailedPrecondition, "closed");
  // Exactly one file: no temporary left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(TFRecordTest, WriterRejectsBadOptionsAndPaths) {
  TFRecordWriterOptions opts;
  opts.compression = Compression::kAuto;
  SLUICE_EXPECT_ERROR(TFRecordWriter::Open("/tmp/x.tfrecord", opts), StatusCode::kInvalidArgument,
                      "auto");
  opts.compression = Compression::kGzip;
  opts.compression_level = 12;
  SLUICE_EXPECT_ERROR(TFRecordWriter::Open("/tmp/x.tfrecord", opts), StatusCode::kInvalidArgument,
                      "compression_level 12");
  SLUICE_EXPECT_ERROR(TFRecordWriter::Open("/nonexistent-dir/x.tfrecord"), StatusCode::kNotFound,
                      "/nonexistent-dir/x.tfrecord");
}

TEST(TFRecordTest, WriterOnFullDiskReportsResourceExhausted) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  TFRecordWriterOptions opts;
  opts.atomic = false;
  opts.buffer_size = 4096;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open("/dev/full", opts));
  Status s = w.Write(std::string(10000, 'a'));
  SLUICE_EXPECT_ERROR(s, StatusCode::kResourceExhausted, "/dev/full");
  EXPECT_EQ(w.Write("b"), s);  // sticky
}

}  // namespace
}  // namespace sluice
