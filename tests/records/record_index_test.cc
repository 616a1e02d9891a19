#include "sluice/records/record_index.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>

#include <fmt/format.h>

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
  // The same lines, then sluice's trailer naming the data file.
  const std::string golden = ReadFileOrDie(data + ".idx");
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndexData digest, DigestDataFile(data));
  EXPECT_EQ(built.ToText(),
            golden + fmt::format("# sluice-index data-bytes={} data-crc32c={:08x}\n", digest.bytes,
                                 digest.crc32c));
  EXPECT_EQ(built.data(), digest);
  // The package's index (no trailer) loads for an uncompressed file.
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex loaded, RecordIndex::LoadFor(data));
  EXPECT_FALSE(loaded.data().has_value());
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

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Writes `n` records "record" to `path`, with an index or not.
void WriteRecords(const std::string& path, int n, Compression c, bool index,
                  const std::string& payload = "record", int level = -1) {
  TFRecordWriterOptions opts;
  opts.compression = c;
  opts.compression_level = level;
  opts.write_index = index;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
  for (int i = 0; i < n; ++i) SLUICE_ASSERT_OK(w.Write(payload));
  SLUICE_ASSERT_OK(w.Close());
}

TEST(RecordIndexTest, StaleIndexOfCompressedFileIsRefusedAndCountStillExact) {
  ScratchDir dir;
  const std::string path = dir.file("g.tfrecord.gz");
  const std::string idx = RecordIndex::PathFor(path);
  WriteRecords(path, 10, Compression::kGzip, true);
  const std::string old_index = ReadFileOrDie(idx);
  // Another writer replaces the data and leaves the old index beside it
  // (sluice's own writer removes it: see below).
  WriteRecords(path, 4, Compression::kGzip, false, "another record, longer");
  WriteFileOrDie(idx, old_index);
  SLUICE_EXPECT_ERROR(RecordIndex::LoadFor(path), StatusCode::kFailedPrecondition,
                      "stale index: it was made for a file of");
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordCount n, CountRecordsOf(path));
  EXPECT_EQ(n.records, 4u);  // scanned, not the stale 10
  EXPECT_FALSE(n.from_index);
  EXPECT_EQ(n.index_status.code(), StatusCode::kFailedPrecondition);
}

// A compressed file rewritten at the same size: only the digest tells.
TEST(RecordIndexTest, CompressedRewriteOfTheSameSizeIsCaughtByTheDigest) {
  ScratchDir dir;
  const std::string path = dir.file("s.tfrecord.zz");
  const std::string idx = RecordIndex::PathFor(path);
  // ZLIB at level 0 (stored blocks) of records of equal length has the
  // same size whatever their bytes.
  const std::string a = RandomBytes(4000, 1), b = RandomBytes(4000, 2);
  WriteRecords(path, 3, Compression::kZlib, true, a, 0);
  const std::string old_index = ReadFileOrDie(idx);
  const uint64_t old_size = std::filesystem::file_size(path);
  WriteRecords(path, 3, Compression::kZlib, false, b, 0);
  ASSERT_EQ(std::filesystem::file_size(path), old_size);
  WriteFileOrDie(idx, old_index);
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex loaded, RecordIndex::LoadFor(path));  // sizes agree
  SLUICE_EXPECT_ERROR(loaded.CheckAgainst(path), StatusCode::kFailedPrecondition, "CRC-32C");
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordCount n, CountRecordsOf(path));
  EXPECT_FALSE(n.from_index);
  EXPECT_EQ(n.records, 3u);
}

// The trial's case: a 5-record file rewritten at the same size with one
// record, its old index left: `count` said 5.
TEST(RecordIndexTest, CountChecksEveryHeaderOfAnUncompressedFile) {
  ScratchDir dir;
  const std::string path = dir.file("same.tfrecord");
  const std::string idx = RecordIndex::PathFor(path);
  WriteRecords(path, 5, Compression::kNone, true, std::string(100, 'a'));  // 5 x 116 bytes
  const std::string old_index = ReadFileOrDie(idx);
  EXPECT_EQ(*CountRecords(path), 5u);
  WriteRecords(path, 1, Compression::kNone, false, std::string(5 * 116 - 16, 'b'));
  ASSERT_EQ(std::filesystem::file_size(path), 5u * 116);
  WriteFileOrDie(idx, old_index);
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex loaded, RecordIndex::LoadFor(path));  // sizes agree
  SLUICE_EXPECT_ERROR(loaded.CheckAgainst(path), StatusCode::kFailedPrecondition,
                      "entry 0 says a record of 100 bytes at offset 0");
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordCount n, CountRecordsOf(path));
  EXPECT_EQ(n.records, 1u);
  EXPECT_FALSE(n.from_index);
  // A forged index whose sizes add up: the header at offset 27 is no header.
  WriteRecords(path, 2, Compression::kNone, false, std::string(100, 'c'));
  WriteFileOrDie(idx, "0 27\n27 205\n");
  SLUICE_ASSERT_OK_AND_ASSIGN(n, CountRecordsOf(path));
  EXPECT_EQ(n.records, 2u);
  EXPECT_FALSE(n.from_index);
  EXPECT_NE(n.index_status.message().find("entry 0 says a record of 11 bytes at offset 0, but"),
            std::string_view::npos)
      << n.index_status;
}

// sluice's writer never leaves an old index beside new data, whatever the
// options: a writer without write_index removes it, one with write_index
// replaces it after the data.
TEST(RecordIndexTest, WriterRemovesTheIndexOfTheFileItReplaces) {
  ScratchDir dir;
  for (bool atomic : {true, false}) {
    const std::string path = dir.file(atomic ? "a.tfrecord" : "n.tfrecord");
    WriteRecords(path, 5, Compression::kNone, true);
    ASSERT_TRUE(std::filesystem::exists(RecordIndex::PathFor(path)));
    TFRecordWriterOptions opts;
    opts.atomic = atomic;
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
    SLUICE_ASSERT_OK(w.Write("x"));
    SLUICE_ASSERT_OK(w.Close());
    EXPECT_FALSE(std::filesystem::exists(RecordIndex::PathFor(path))) << path;
    EXPECT_EQ(*CountRecords(path), 1u);
  }
}

TEST(RecordIndexTest, TrailerParsing) {
  SLUICE_ASSERT_OK_AND_ASSIGN(
      RecordIndex i, RecordIndex::Parse("0 16\n16 20\n# a comment\n# sluice-index data-bytes=36 "
                                        "data-crc32c=0000abcd later-field=1\n",
                                        "t.idx"));
  EXPECT_EQ(i.size(), 2u);
  ASSERT_TRUE(i.data().has_value());
  EXPECT_EQ(i.data()->bytes, 36u);
  EXPECT_EQ(i.data()->crc32c, 0xabcdu);
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 16\n# sluice-index data-bytes=x data-crc32c=1\n", "t"),
                      StatusCode::kDataLoss, "t:2: malformed trailer");
  SLUICE_EXPECT_ERROR(RecordIndex::Parse("0 16\n# sluice-index data-bytes=16\n", "t"),
                      StatusCode::kDataLoss, "malformed trailer");
  SLUICE_EXPECT_ERROR(
      RecordIndex::Parse("# sluice-index data-bytes=16 data-crc32c=00000000\n0 16\n", "t"),
      StatusCode::kDataLoss, "t:2: an entry after the trailer");
}

// An index of a compressed file without a trailer (an older sluice's) says
// nothing about which version of the file it describes.
TEST(RecordIndexTest, CompressedIndexWithoutTrailerIsStale) {
  ScratchDir dir;
  const std::string path = dir.file("o.tfrecord.gz");
  WriteRecords(path, 3, Compression::kGzip, true);
  const std::string text = ReadFileOrDie(RecordIndex::PathFor(path));
  WriteFileOrDie(RecordIndex::PathFor(path), text.substr(0, text.find("# sluice-index")));
  SLUICE_EXPECT_ERROR(RecordIndex::LoadFor(path), StatusCode::kFailedPrecondition,
                      "has no trailer naming the data");
  EXPECT_EQ(*CountRecords(path), 3u);
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
