#include "sluice/records/indexed_tfrecord_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/index_permutation.h"
#include "sluice/core/rng.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"
#include "tfrecord_test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;
using testing::WriteFileOrDie;

// Payloads of varied lengths (empty, small, 100 KB), deterministic.
std::vector<std::string> MakePayloads(int n) {
  Rng rng(5);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    size_t len = rng.UniformInt(3000);
    if (i % 17 == 0) len = 0;
    if (i % 50 == 7) len = 100 << 10;
    out.push_back(testing::GoldenPayload(i, len));
  }
  return out;
}

// Writes `records` to `path` (and `path`.idx unless write_index is false).
void WriteFile(const std::string& path, const std::vector<std::string>& records,
               Compression compression = Compression::kNone, bool write_index = true) {
  TFRecordWriterOptions opts;
  opts.compression = compression;
  opts.write_index = write_index;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
  for (const std::string& r : records) SLUICE_ASSERT_OK(w.Write(r));
  SLUICE_ASSERT_OK(w.Close());
}

// Every record in order, read with TFRecordReader.
std::vector<Record> ReadSequentially(const std::string& path) {
  std::vector<Record> out;
  Result<TFRecordReader> reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  while (true) {
    Result<std::optional<Record>> r = reader->Next();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) break;
    out.push_back(std::move(**r));
  }
  return out;
}

TEST(IndexedTFRecordFileTest, RandomReadsMatchSequentialReading) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  const std::vector<std::string> payloads = MakePayloads(300);
  WriteFile(path, payloads);
  const std::vector<Record> expected = ReadSequentially(path);
  ASSERT_EQ(expected.size(), payloads.size());

  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  EXPECT_EQ(file.num_records(), payloads.size());
  EXPECT_EQ(file.path(), path);
  // In a shuffled order, then in order.
  const IndexPermutation perm(file.num_records(), 11);
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t k = 0; k < file.num_records(); ++k) {
      const uint64_t i = pass == 0 ? perm(k) : k;
      SLUICE_ASSERT_OK_AND_ASSIGN(Record r, file.Read(i));
      EXPECT_EQ(r.number, i);
      EXPECT_EQ(r.offset, expected[i].offset);
      EXPECT_EQ(r.data, expected[i].data) << "record " << i;
      EXPECT_EQ(r.data, payloads[i]);
    }
  }
  SLUICE_EXPECT_ERROR(file.Read(300), StatusCode::kOutOfRange, "cannot read record 300");
  SLUICE_EXPECT_ERROR(file.Read(~uint64_t{0}), StatusCode::kOutOfRange, "the index lists 300");
}

TEST(IndexedTFRecordFileTest, ReadRunReadsAdjacentRecordsWithinTheByteLimit) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  const std::vector<std::string> payloads = MakePayloads(300);
  WriteFile(path, payloads);
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  for (size_t limit : {size_t{1}, size_t{4096}, size_t{64} << 10, size_t{1} << 20}) {
    uint64_t next = 0;
    int runs = 0;
    while (next < file.num_records()) {
      SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<Record> run, file.ReadRun(next, limit));
      ASSERT_FALSE(run.empty());
      uint64_t bytes = 0;
      for (const Record& r : run) {
        EXPECT_EQ(r.number, next);
        EXPECT_EQ(r.data, payloads[next]) << "record " << next << ", limit " << limit;
        bytes += file.index()[next].length;
        ++next;
      }
      if (run.size() > 1) {
        EXPECT_LE(bytes, limit);
      }
      ++runs;
    }
    if (limit == 1) {
      EXPECT_EQ(runs, 300);  // at least one record per run
    }
    if (limit == (size_t{1} << 20)) {
      EXPECT_LT(runs, 10);
    }
  }
  SLUICE_EXPECT_ERROR(file.ReadRun(300, 1 << 20), StatusCode::kOutOfRange,
                      "cannot read record 300");
}

TEST(IndexedTFRecordFileTest, ReadRunStopsBeforeACorruptRecord) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  WriteFile(path, {"zero", "one one", "two two two", "three"});
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::LoadFor(path));
  std::string bytes = ReadFileOrDie(path);
  bytes[index[2].offset + 12 + 3] ^= 0x40;  // a payload byte of record 2
  WriteFileOrDie(path, bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<Record> run, file.ReadRun(0, 1 << 20));
  ASSERT_EQ(run.size(), 2u);  // the good records before the damage
  EXPECT_EQ(run[1].data, "one one");
  SLUICE_EXPECT_ERROR(file.ReadRun(2, 1 << 20), StatusCode::kDataLoss,
                      path + ": record 2 at offset " + std::to_string(index[2].offset));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<Record> tail, file.ReadRun(3, 1 << 20));
  EXPECT_EQ(tail.at(0).data, "three");
}

TEST(IndexedTFRecordFileTest, StridedRunsCheckAndKeepOnlyEveryKthRecord) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  const std::vector<std::string> payloads = MakePayloads(40);
  WriteFile(path, payloads);
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::LoadFor(path));
  // Record 6 is damaged: a reader taking records 1, 4, 7, ... never sees it.
  std::string bytes = ReadFileOrDie(path);
  bytes[index[6].offset + 12] ^= 0x40;
  WriteFileOrDie(path, bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<Record> run, file.ReadRun(1, 1 << 20, 3));
  ASSERT_EQ(run.size(), 13u);  // 1, 4, ..., 37
  for (size_t k = 0; k < run.size(); ++k) {
    EXPECT_EQ(run[k].number, 1 + 3 * k);
    EXPECT_EQ(run[k].data, payloads[1 + 3 * k]);
  }
  // Stride 2 from 0 meets record 6: the run stops before it, and reading
  // from it names it.
  SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<Record> even, file.ReadRun(0, 1 << 20, 2));
  ASSERT_EQ(even.size(), 3u);  // 0, 2, 4
  SLUICE_EXPECT_ERROR(file.ReadRun(6, 1 << 20, 2), StatusCode::kDataLoss, "record 6 at offset");
}

TEST(IndexedTFRecordFileTest, ReadsGoldenFileWithTfrecord2idxIndex) {
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file,
                              IndexedTFRecordFile::Open(TestDataPath("tf/records_none.tfrecord")));
  ASSERT_EQ(file.num_records(), testing::GoldenLengths().size());
  for (uint64_t i = file.num_records(); i-- > 0;) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Record r, file.Read(i));
    EXPECT_EQ(r.data, testing::GoldenPayload(static_cast<int>(i), testing::GoldenLengths()[i]));
  }
}

TEST(IndexedTFRecordFileTest, RecordsOutliveTheFileAndCopiesShareIt) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  const std::vector<std::string> payloads = MakePayloads(20);
  WriteFile(path, payloads);
  std::vector<Record> kept;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
    IndexedTFRecordFile copy = file;
    EXPECT_EQ(&copy.index(), &file.index());  // shared, not copied
    IndexedTFRecordFile moved = std::move(file);
    for (uint64_t i = 0; i < moved.num_records(); ++i) kept.push_back(*moved.Read(i));
    file = copy;  // a moved-from object can be assigned to
    EXPECT_EQ(file.num_records(), 20u);
  }
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i].data, payloads[i]);
}

TEST(IndexedTFRecordFileTest, ScratchBufferIsReusedWhenFree) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  WriteFile(path, {"aaaa", std::string(1000, 'b'), "cc"});
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  Buffer scratch;
  const uint8_t* big = nullptr;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(Record r, file.Read(1, &scratch));
    EXPECT_EQ(r.data, std::string(1000, 'b'));
    big = scratch.data();
    EXPECT_EQ(r.owner.data(), big);
  }
  {
    // Free and large enough: the same bytes.
    SLUICE_ASSERT_OK_AND_ASSIGN(Record r, file.Read(0, &scratch));
    EXPECT_EQ(r.data, "aaaa");
    EXPECT_EQ(scratch.data(), big);
    // Still held by `r`: the next read gets a buffer of its own.
    SLUICE_ASSERT_OK_AND_ASSIGN(Record r2, file.Read(2, &scratch));
    EXPECT_EQ(r2.data, "cc");
    EXPECT_NE(scratch.data(), big);
    EXPECT_EQ(r.data, "aaaa");  // untouched
  }
}

TEST(IndexedTFRecordFileTest, ConcurrentReadsFromManyThreads) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  const std::vector<std::string> payloads = MakePayloads(400);
  WriteFile(path, payloads);
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  constexpr int kThreads = 4;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const IndexPermutation perm(file.num_records(), t);
      Buffer scratch;
      for (uint64_t k = 0; k < file.num_records(); ++k) {
        const uint64_t i = perm(k);
        Result<Record> r = file.Read(i, &scratch);
        if (!r.ok() || r->data != payloads[i]) ++mismatches[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(IndexedTFRecordFileTest, CorruptPayloadIsDataLossNamingRecordAndOffset) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  WriteFile(path, {"zero", "one one", "two two two", "three"});
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::LoadFor(path));
  std::string bytes = ReadFileOrDie(path);
  bytes[index[2].offset + 12 + 3] ^= 0x40;  // a payload byte of record 2
  WriteFileOrDie(path, bytes);

  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  const std::string where = path + ": record 2 at offset " + std::to_string(index[2].offset);
  SLUICE_EXPECT_ERROR(file.Read(2), StatusCode::kDataLoss, where);
  SLUICE_EXPECT_ERROR(file.Read(2), StatusCode::kDataLoss, "data checksum does not match");
  // The others still read.
  EXPECT_EQ(file.Read(1)->data, "one one");
  EXPECT_EQ(file.Read(3)->data, "three");
  // Without data checksums the damaged bytes come back as they are.
  SLUICE_ASSERT_OK_AND_ASSIGN(
      IndexedTFRecordFile unchecked,
      IndexedTFRecordFile::Open(path, IndexedTFRecordFileOptions{.verify_checksums = false}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Record r, unchecked.Read(2));
  EXPECT_EQ(r.data, "two`two two");
}

TEST(IndexedTFRecordFileTest, CorruptHeaderIsDataLossEvenWithoutDataChecksums) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  WriteFile(path, {"zero", "one", "two"});
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::LoadFor(path));
  std::string bytes = ReadFileOrDie(path);
  bytes[index[1].offset + 9] ^= 0x01;  // the length's CRC
  WriteFileOrDie(path, bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(
      IndexedTFRecordFile file,
      IndexedTFRecordFile::Open(path, IndexedTFRecordFileOptions{.verify_checksums = false}));
  SLUICE_EXPECT_ERROR(
      file.Read(1), StatusCode::kDataLoss,
      "record 1 at offset " + std::to_string(index[1].offset) + ": corrupt record header");
  EXPECT_EQ(file.Read(2)->data, "two");
}

TEST(IndexedTFRecordFileTest, IndexThatLiesIsAnErrorNotACrash) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  const std::vector<std::string> payloads = {"aaaaaaaa", "bbbb", "cccccccccccc", "dd"};
  WriteFile(path, payloads);
  const std::string idx = RecordIndex::PathFor(path);
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex real, RecordIndex::LoadFor(path));

  // A boundary moved, same total: the records next to it fail, others read.
  std::vector<RecordIndexEntry> e = real.entries();
  e[1].length += 4;
  e[2].offset += 4;
  e[2].length -= 4;
  WriteFileOrDie(idx, RecordIndex(e).ToText());
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
    SLUICE_EXPECT_ERROR(file.Read(1), StatusCode::kDataLoss,
                        "record 1 at offset " + std::to_string(e[1].offset) +
                            ": the index says 8 bytes but the record holds 4");
    SLUICE_EXPECT_ERROR(file.Read(2), StatusCode::kDataLoss, "record 2 at offset");
    EXPECT_EQ(file.Read(0)->data, payloads[0]);
    EXPECT_EQ(file.Read(3)->data, payloads[3]);
  }
  // Lengths of two records swapped: contiguous and the right total.
  e = real.entries();
  std::swap(e[0].length, e[1].length);
  e[1].offset = e[0].length;
  WriteFileOrDie(idx, RecordIndex(e).ToText());
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
    SLUICE_EXPECT_ERROR(file.Read(0), StatusCode::kDataLoss, "the index says 4 bytes");
    SLUICE_EXPECT_ERROR(file.Read(1), StatusCode::kDataLoss, "record 1");
  }
  // One record too few: stale.
  e = real.entries();
  e.pop_back();
  WriteFileOrDie(idx, RecordIndex(e).ToText());
  SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(path), StatusCode::kFailedPrecondition,
                      "stale index");
  // Not an index at all.
  WriteFileOrDie(idx, "0 24\nhello world\n");
  SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(path), StatusCode::kDataLoss, ":2: expected");
  // A huge length that overflows to the file size (RecordIndex's
  // constructor does not check it; Read() does).
  const uint64_t size = real.stream_size();
  e = {{0, real[0].length}, {uint64_t{1} << 63, size - (uint64_t{1} << 63)}};
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile hand,
                              IndexedTFRecordFile::Open(path, RecordIndex(e)));
  SLUICE_EXPECT_ERROR(hand.Read(1), StatusCode::kDataLoss, "does not fit in the file");
  EXPECT_EQ(hand.Read(0)->data, payloads[0]);
  // No index.
  std::filesystem::remove(idx);
  SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(path), StatusCode::kNotFound, ".idx");
  SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(dir.file("missing.tfrecord")),
                      StatusCode::kNotFound, "missing.tfrecord");
}

TEST(IndexedTFRecordFileTest, CompressedFilesAreInvalidArgument) {
  ScratchDir dir;
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    const std::string name = std::string(CompressionName(c));
    const std::string with_index = dir.file(name + ".tfrecord");
    WriteFile(with_index, {"a", "b", "c"}, c, /*write_index=*/true);
    SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(with_index), StatusCode::kInvalidArgument,
                        name + "-compressed");
    const std::string without_index = dir.file(name + "-noidx.tfrecord");
    WriteFile(without_index, {"a", "b", "c"}, c, /*write_index=*/false);
    SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(without_index), StatusCode::kInvalidArgument,
                        "uncompressed");
    SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::LoadFor(with_index));
    SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(with_index, index), StatusCode::kInvalidArgument,
                        with_index);
  }
}

TEST(IndexedTFRecordFileTest, TruncatedFileIsAnError) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  const std::vector<std::string> payloads = MakePayloads(10);
  WriteFile(path, payloads);
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::LoadFor(path));
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile file, IndexedTFRecordFile::Open(path));
  // Cut short after opening: the last record's pread comes up short.
  const uint64_t size = index.stream_size();
  std::filesystem::resize_file(path, size - 10);
  SLUICE_EXPECT_ERROR(file.Read(9), StatusCode::kDataLoss,
                      "record 9 at offset " + std::to_string(index[9].offset) + ": truncated");
  EXPECT_EQ(file.Read(8)->data, payloads[8]);
  // Cut short before opening: the index no longer matches.
  SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(path), StatusCode::kFailedPrecondition,
                      "stale index");
  // Cut inside the first header: still an error, whatever opens it.
  std::filesystem::resize_file(path, 5);
  SLUICE_EXPECT_ERROR(IndexedTFRecordFile::Open(path), StatusCode::kFailedPrecondition,
                      "stale index");
  SLUICE_EXPECT_ERROR(file.Read(0), StatusCode::kDataLoss, "truncated");
}

TEST(IndexedTFRecordFileTest, MaxRecordSizeIsCheckedBeforeReading) {
  ScratchDir dir;
  const std::string path = dir.file("data.tfrecord");
  WriteFile(path, {"short", std::string(5000, 'x')});
  SLUICE_ASSERT_OK_AND_ASSIGN(
      IndexedTFRecordFile file,
      IndexedTFRecordFile::Open(path, IndexedTFRecordFileOptions{.max_record_size = 100}));
  EXPECT_EQ(file.Read(0)->data, "short");
  SLUICE_EXPECT_ERROR(file.Read(1), StatusCode::kDataLoss,
                      "record length 5000 exceeds max_record_size 100");
}

TEST(IndexedTFRecordFileTest, MemoryFilesAndEmptyFiles) {
  ScratchDir dir;
  const std::string bytes =
      testing::WriteRecordsToBytes(dir.path(), {"x", "yy"}, Compression::kNone);
  SLUICE_ASSERT_OK_AND_ASSIGN(RecordIndex index, RecordIndex::Parse("0 17\n17 18\n", "mem.idx"));
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile mem,
                              IndexedTFRecordFile::Open(NewMemoryFile("mem", bytes), index));
  EXPECT_EQ(mem.path(), "mem");
  EXPECT_EQ(mem.Read(1)->data, "yy");
  Buffer scratch;
  EXPECT_EQ(mem.Read(0, &scratch)->data, "x");

  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile empty,
                              IndexedTFRecordFile::Open(NewMemoryFile("empty", ""), RecordIndex()));
  EXPECT_EQ(empty.num_records(), 0u);
  SLUICE_EXPECT_ERROR(empty.Read(0), StatusCode::kOutOfRange, "empty: cannot read record 0");
}

}  // namespace
}  // namespace sluice
