#include "sluice/records/record_index.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"
#include "tfrecord_test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;
using testing::WriteFileOrDie;

// The index the python `tfrecord` package's tfrecord2idx made (DALI's format).
TEST(RecordIndexTest, MatchesTfrecord2idxOutput) {
  const std::string data = TestDataPath("tf/records_none.tfrecord");
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex built, RecordIndex::Build(data));
  EXPECT_EQ(built.ToText(), ReadFileOrDie(data + ".idx"));
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex loaded, RecordIndex::LoadFor(data));
  EXPECT_EQ(loaded.entries(), built.entries());
  EXPECT_EQ(loaded.size(), testing::GoldenLengths().size());
  EXPECT_EQ(loaded[5].payload_length(), 65536u);
  EXPECT_EQ(*CountRecords(data), 8u);
}

TEST(RecordIndexTest, SeekToEveryRecord) {
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    const std::string data =
        TestDataPath("tf/records_" + std::string(CompressionName(c)) + ".tfrecord");
    SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::Build(data));
    TFRecordReaderOptions opts;
    opts.buffer_size = 4096;
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader, TFRecordReader::Open(data, opts));
    for (uint64_t n : {7, 0, 5, 5, 2, 8, 1}) {
      SLUICE_ASSERT_OK(reader.Seek(index, n));
      SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Record> r, reader.Next());
      if (n == 8) {
        EXPECT_FALSE(r.has_value());
        continue;
      }
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->number, n);
      EXPECT_EQ(r->data, testing::GoldenPayload(n, testing::GoldenLengths()[n]));
    }
    SLUICE_EXPECT_ERROR(reader.Seek(index, 9), StatusCode::kOutOfRange, "the index lists 8");
  }
}

TEST(RecordIndexTest, WriterWritesIndexAndStaleIndexIsDetected) {
  ScratchDir dir;
  const std::string path = dir.file("w.tfrecord");
  TFRecordWriterOptions opts;
  opts.write_index = true;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
  for (int i = 0; i < 10; ++i) SLUICE_ASSERT_OK(w.Write(std::string(i, 'a')));
  SLUICE_ASSERT_OK(w.Close());
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex written, RecordIndex::LoadFor(path));
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex scanned, RecordIndex::Build(path));
  EXPECT_EQ(written.entries(), scanned.entries());
  // Append to the data file: the index no longer matches.
  WriteFileOrDie(path, ReadFileOrDie(path) + std::string(20, 'x'));
  SLUICE_EXPECT_ERROR(RecordIndex::LoadFor(path), StatusCode::kFailedPrecondition, "stale index");
  // A mismatching index used for seeking is reported, not trusted.
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader, TFRecordReader::Open(path));
  SLUICE_EXPECT_ERROR(reader.Seek(written, 3), StatusCode::kFailedPrecondition, "rebuild");
}

TEST(RecordIndexTest, IndexThatLiesAboutLengthsIsDataLoss) {
  const std::string data = TestDataPath("tf/records_none.tfrecord");
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex real, RecordIndex::Build(data));
  std::vector<RecordIndexEntry> e = real.entries();
  // Shift a boundary: entry 2 shorter, entry 3 starts earlier, same total.
  e[2].length -= 4;
  e[3].offset -= 4;
  e[3].length += 4;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reader, TFRecordReader::Open(data));
  SLUICE_ASSERT_OK(reader.Seek(RecordIndex(e), 2));
  SLUICE_EXPECT_ERROR(reader.Next(), StatusCode::kDataLoss, "the index says 7 bytes");
  SLUICE_ASSERT_OK(reader.Seek(RecordIndex(e), 3));
  SLUICE_EXPECT_ERROR(reader.Next(), StatusCode::kDataLoss, "record 3");
}

TEST(RecordIndexTest, StaleIndexOfCompressedFileIsRefusedAndCountStillExact) {
  ScratchDir dir;
  const std::string path = dir.file("g.tfrecord.gz");
  TFRecordWriterOptions opts;
  opts.compression = Compression::kGzip;
  opts.write_index = true;
  for (int n : {10, 4}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
    for (int i = 0; i < n; ++i) SLUICE_ASSERT_OK(w.Write("record"));
    SLUICE_ASSERT_OK(w.Close());
    opts.write_index = false;  // the second file keeps the first one's index
  }
  // Make the data file strictly newer than the index, whatever the clock's grain.
  const auto idx_time = std::filesystem::last_write_time(RecordIndex::PathFor(path));
  std::filesystem::last_write_time(path, idx_time + std::chrono::seconds(1));
  SLUICE_EXPECT_ERROR(RecordIndex::LoadFor(path), StatusCode::kFailedPrecondition, "stale index");
  EXPECT_EQ(*CountRecords(path), 4u);  // scanned, not the stale 10
}

TEST(RecordIndexTest, ParseRejectsMalformedText) {
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex ok, RecordIndex::Parse("0 16\n16 20\r\n\n36 17", "i"));
  EXPECT_EQ(ok.size(), 3u);
  EXPECT_EQ(ok.stream_size(), 53u);
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 16\nabc def\n", "x.idx"), StatusCode::kDataLoss,
                      "x.idx:2: expected");
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 16\n17 16\n", "x.idx"), StatusCode::kDataLoss,
                      "x.idx:2: record starts at offset 17 but the previous one ends at 16");
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 15\n", "x.idx"), StatusCode::kDataLoss,
                      "impossible record length 15");
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 16\n16 18446744073709551615\n", "x.idx"),
                      StatusCode::kDataLoss, "impossible");
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 -16\n", "x.idx"), StatusCode::kDataLoss, "expected");
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 16 7\n", "x.idx"), StatusCode::kDataLoss, "expected");
  SLUICE_EXPECT_ERROR(RecordIndex::Load("/nonexistent.idx"), StatusCode::kNotFound, "nonexistent");
}

TEST(RecordIndexTest, SaveIsAtomicAndCountWorksWithoutIndex) {
  ScratchDir dir;
  const std::string path = dir.file("c.tfrecord");
  WriteFileOrDie(path, ReadFileOrDie(TestDataPath("tf/records_zlib.tfrecord")));
  EXPECT_FALSE(std::filesystem::exists(RecordIndex::PathFor(path)));
  EXPECT_EQ(*CountRecords(path), 8u);  // by scanning
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::Build(path));
  SLUICE_ASSERT_OK(index.Save(RecordIndex::PathFor(path)));
  EXPECT_EQ(*CountRecords(path), 8u);  // from the index
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2);
}

}  // namespace
}  // namespace sluice
