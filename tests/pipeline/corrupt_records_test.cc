// ignore_errors over damaged TFRecord files, in every read path: a record
// whose data is corrupt is skipped and counted, a truncated last record ends
// its file (counted), the next file goes on, and stats say where.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "conformance.h"
#include "ignore_errors_util.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::WriteFileOrDie;

constexpr int kFiles = 3;
constexpr int kRecords = 21;  // per file: 63 in all

std::string RecordText(int file, int record) {
  return "file " + std::to_string(file) + " record " + std::to_string(record);
}

// Writes kFiles files of kRecords records; returns their paths.
std::vector<std::string> WriteFiles(const ScratchDir& dir, bool index) {
  std::vector<std::string> paths;
  for (int f = 0; f < kFiles; ++f) {
    const std::string path = dir.file("part-" + std::to_string(f) + ".tfrecord");
    TFRecordWriterOptions o;
    o.write_index = index;
    auto w = TFRecordWriter::Open(path, o);
    EXPECT_TRUE(w.ok()) << w.status();
    for (int r = 0; r < kRecords; ++r) EXPECT_TRUE(w->Write(RecordText(f, r)).ok());
    EXPECT_TRUE(w->Close().ok());
    paths.push_back(path);
  }
  return paths;
}

// Flips a byte in the data of `record` of the file: its data CRC fails, its
// framing holds.
void CorruptData(const std::string& path, int record) {
  std::string bytes = ReadFileOrDie(path);
  size_t offset = 0;
  for (int r = 0; r < record; ++r) offset += 16 + RecordText(0, r).size();  // same lengths
  bytes[offset + 12] ^= 0x5a;
  WriteFileOrDie(path, bytes);
}

// Cuts the last `n` bytes off the file: its last record is truncated.
void Truncate(const std::string& path, size_t n) {
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - n);
}

using Outcome = testing::IgnoredErrors;
using testing::ReadIgnoringErrors;

// Every record but the named ones, sorted.
std::vector<std::string> AllBut(const std::set<std::string>& missing) {
  std::vector<std::string> v;
  for (int f = 0; f < kFiles; ++f) {
    for (int r = 0; r < kRecords; ++r) {
      if (!missing.count(RecordText(f, r))) v.push_back(RecordText(f, r));
    }
  }
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

bool Mentions(const std::vector<std::string>& errors, const std::string& needle) {
  return std::any_of(errors.begin(), errors.end(),
                     [&](const std::string& e) { return e.find(needle) != std::string::npos; });
}

TEST(CorruptRecordsTest, IndexedFilesSkipTheCorruptRecordOnly) {
  ScratchDir dir;
  auto files = WriteFiles(dir, /*index=*/true);
  CorruptData(files[1], 5);
  Dataset ds = TFRecordDataset(files);
  ASSERT_EQ(ds.cardinality(), kFiles * kRecords);  // the indexed path
  const Outcome o = ReadIgnoringErrors(ds);
  EXPECT_EQ(Sorted(o.records), AllBut({RecordText(1, 5)}));
  EXPECT_EQ(o.skipped, 1);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find(files[1] + ": record 5 at offset"), std::string::npos) << o.errors[0];
  EXPECT_NE(o.errors[0].find("data checksum"), std::string::npos) << o.errors[0];
  // Order is kept around the hole.
  EXPECT_EQ(o.records[kRecords + 4], RecordText(1, 4));
  EXPECT_EQ(o.records[kRecords + 5], RecordText(1, 6));
}

// With parallel reads each file's next run is read ahead in a task; runs of
// a few records (buffer_size 100: 3-4 of ~29 bytes) make every file's
// corrupt record fall in a run read ahead. The outcome is the sequential
// path's: the same records in the same rotation, the same one error.
TEST(CorruptRecordsTest, IndexedParallelReadsReadAheadSkipTheCorruptRecordOnly) {
  ScratchDir dir;
  auto indexed = WriteFiles(dir, /*index=*/true);
  CorruptData(indexed[1], 9);
  ScratchDir plain_dir;
  auto plain = WriteFiles(plain_dir, /*index=*/false);
  CorruptData(plain[1], 9);
  for (int64_t buffer : {int64_t{1}, int64_t{100}, int64_t{1} << 20}) {
    SCOPED_TRACE("buffer_size " + std::to_string(buffer));
    Dataset ds = TFRecordDataset(indexed, {.buffer_size = buffer, .num_parallel_reads = 3});
    ASSERT_EQ(ds.cardinality(), kFiles * kRecords);  // the indexed path
    const Outcome o = ReadIgnoringErrors(ds);
    const Outcome want = ReadIgnoringErrors(TFRecordDataset(plain, {.num_parallel_reads = 3}));
    EXPECT_EQ(o.records, want.records);
    EXPECT_EQ(Sorted(o.records), AllBut({RecordText(1, 9)}));
    EXPECT_EQ(o.skipped, 1);
    ASSERT_EQ(o.errors.size(), 1u);
    EXPECT_NE(o.errors[0].find(indexed[1] + ": record 9 at offset"), std::string::npos)
        << o.errors[0];
  }
}

TEST(CorruptRecordsTest, IndexedStackedReadsUnderBatchSkipTheFailedBatchOnly) {
  ScratchDir dir;
  auto files = WriteFiles(dir, /*index=*/true);
  CorruptData(files[0], 3);
  // batch straight over the source reads stacked runs: records 0-2, then
  // record 3's error fails the first batch (as in tf.data) and the next
  // batch starts right after it.
  auto it = TFRecordDataset(files).batch(4).ignore_errors().iterator();
  ASSERT_TRUE(it.ok()) << it.status();
  int64_t rows = 0;
  std::string first;
  for (;;) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto b, it->next());
    if (!b) break;
    if (first.empty()) first = std::string((*b)[0].flat<std::string_view>()[0]);
    rows += (*b)[0].shape().dim(0);
  }
  EXPECT_EQ(first, RecordText(0, 4));
  EXPECT_EQ(rows, kFiles * kRecords - 4);
}

TEST(CorruptRecordsTest, GlobalShuffleSkipsTheCorruptRecordOnly) {
  ScratchDir dir;
  auto files = WriteFiles(dir, /*index=*/true);
  CorruptData(files[2], 0);
  CorruptData(files[0], 20);
  const Outcome o = ReadIgnoringErrors(TFRecordDataset(files).global_shuffle({.seed = 3}));
  EXPECT_EQ(Sorted(o.records), AllBut({RecordText(2, 0), RecordText(0, 20)}));
  EXPECT_EQ(o.skipped, 2);
  EXPECT_TRUE(Mentions(o.errors, files[2] + ": record 0 at offset 0"));
}

class SequentialCorruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = WriteFiles(dir_, /*index=*/false);
    CorruptData(files_[0], 7);
    Truncate(files_[1], 5);  // file 1's record 20 is cut short
  }
  std::set<std::string> Lost() const { return {RecordText(0, 7), RecordText(1, 20)}; }
  void ExpectSkipped(const Outcome& o) const {
    EXPECT_EQ(Sorted(o.records), AllBut(Lost()));
    EXPECT_EQ(o.skipped, 2);
    EXPECT_TRUE(Mentions(o.errors, files_[0] + ": record 7 at offset")) << o.errors.size();
    EXPECT_TRUE(Mentions(o.errors, files_[1] + ": record 20 at offset")) << o.errors.size();
    EXPECT_TRUE(Mentions(o.errors, "truncated"));
  }
  ScratchDir dir_;
  std::vector<std::string> files_;
};

TEST_F(SequentialCorruptTest, OneFileAfterAnother) {
  Dataset ds = TFRecordDataset(files_);
  ASSERT_EQ(ds.cardinality(), kUnknownCardinality);  // the sequential path
  const Outcome o = ReadIgnoringErrors(ds);
  ExpectSkipped(o);
  // The truncated tail ended file 1 and file 2 followed in full.
  EXPECT_EQ(o.records.back(), RecordText(2, kRecords - 1));
}

TEST_F(SequentialCorruptTest, ParallelReadsKeepTheRotation) {
  // A failed record takes its turn: the round robin around it is unchanged.
  std::vector<std::string> want;
  for (int r = 0; r < kRecords; ++r) {
    for (int f = 0; f < kFiles; ++f) {
      if (!Lost().count(RecordText(f, r))) want.push_back(RecordText(f, r));
    }
  }
  // Whole files in one block, then blocks of one and of ~3 records, each
  // next block read ahead in a task: the same outcome.
  for (int64_t buffer : {int64_t{1} << 20, int64_t{1}, int64_t{100}}) {
    SCOPED_TRACE("buffer_size " + std::to_string(buffer));
    const Outcome o = ReadIgnoringErrors(
        TFRecordDataset(files_, {.buffer_size = buffer, .num_parallel_reads = 3}));
    ExpectSkipped(o);
    EXPECT_EQ(o.records, want);
  }
}

TEST_F(SequentialCorruptTest, Interleave) {
  for (int64_t parallelism : {int64_t{1}, int64_t{3}}) {
    auto ds = Dataset::list_files(dir_.file("part-*.tfrecord"))
                  .interleave(tfrecords(), {.cycle_length = 2, .parallelism = parallelism});
    ExpectSkipped(ReadIgnoringErrors(ds));
  }
}

TEST_F(SequentialCorruptTest, RestorePastTheCorruptRecordGivesTheRest) {
  // Without an index the restore reads file 0 up to record 10 again, over
  // the corrupt record 7; before, that error ended the restore and the slot
  // lost the rest of the file.
  const Dataset ds = TFRecordDataset(files_).ignore_errors();
  const Outcome all = ReadIgnoringErrors(TFRecordDataset(files_));
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  for (int i = 0; i < 9; ++i) SLUICE_ASSERT_OK(it.next().status());  // records 0-6, 8, 9
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, it.save());
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator restored, ds.iterator());
  SLUICE_ASSERT_OK(restored.restore(state));
  std::vector<std::string> rest;
  for (;;) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto e, restored.next());
    if (!e) break;
    rest.emplace_back((*e)[0].scalar<std::string_view>());
  }
  EXPECT_EQ(rest, std::vector<std::string>(all.records.begin() + 9, all.records.end()));
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.front(), RecordText(0, 10));
}

TEST_F(SequentialCorruptTest, WithoutIgnoreErrorsTheFirstErrorEndsThePipeline) {
  auto it = TFRecordDataset(files_).iterator();
  ASSERT_TRUE(it.ok());
  Status error;
  int read = 0;
  for (;;) {
    auto e = it->next();
    if (!e.ok()) {
      error = e.status();
      break;
    }
    if (!e->has_value()) break;
    ++read;
  }
  EXPECT_EQ(read, 7);
  SLUICE_EXPECT_ERROR(error, StatusCode::kDataLoss, files_[0] + ": record 7 at offset");
  SLUICE_EXPECT_ERROR(it->next().status(), StatusCode::kDataLoss, "record 7");  // repeated
}

TEST_F(SequentialCorruptTest, ErrorsListedInStatsText) {
  auto it = TFRecordDataset(files_).ignore_errors().iterator();
  ASSERT_TRUE(it.ok());
  while (true) {
    auto e = it->next();
    ASSERT_TRUE(e.ok());
    if (!e->has_value()) break;
  }
  const IteratorStats st = it->stats();
  EXPECT_NE(st.ToString().find("2 errors skipped:"), std::string::npos) << st.ToString();
  EXPECT_NE(st.ToJson().find("\"errors\": ["), std::string::npos);
}

}  // namespace
}  // namespace sluice
