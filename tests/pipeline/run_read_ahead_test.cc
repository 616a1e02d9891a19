// ReadAhead (through RunReadAhead and with RecordBlocks) and
// ReadRecordBlock on their own: what is read ahead is the read the iterator
// would make, or nothing; charges and counts come and go with it.
// tests/pipeline/source_stages_test.cc and corrupt_records_test.cc check
// TFRecordDataset with it.
#include "sluice/pipeline/internal/run_read_ahead.h"

#include "sluice/pipeline/internal/read_ahead.h"
#include "sluice/pipeline/internal/record_block.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sluice/records/indexed_tfrecord_file.h"
#include "sluice/records/tfrecord_reader.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice::pipeline_internal {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::WriteFileOrDie;

constexpr int kRecords = 50;

std::string Text(int r) { return "record " + std::to_string(100 + r); }  // 10 bytes

// A file of kRecords records of 10 bytes (26 framed), with its index.
std::string WriteFile(const ScratchDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  auto w = TFRecordWriter::Open(path, {.write_index = true});
  EXPECT_TRUE(w.ok()) << w.status();
  for (int r = 0; r < kRecords; ++r) EXPECT_TRUE(w->Write(Text(r)).ok());
  EXPECT_TRUE(w->Close().ok());
  return path;
}

std::vector<std::string> Texts(const std::vector<Record>& run) {
  std::vector<std::string> v;
  for (const Record& r : run) v.emplace_back(r.data);
  return v;
}

struct Rig {
  explicit Rig(Options o = {.cpu_budget = 2, .autotune = false}) : ctx(o) {}
  IteratorContext ctx;
  StageCounters counters;
};

// Takes `key` of file 0 until a task had read it (a queued one is taken
// back and started again); false after 10 s.
bool TakeReadAhead(RunReadAhead& ra, const IndexedTFRecordFile& f, const RunReadAhead::RunKey& key,
                   Result<std::vector<Record>>* out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    ra.Start(f, 0, key);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::optional<Result<std::vector<Record>>> r = ra.Take(0, key);
    if (r) {
      *out = std::move(*r);
      return true;
    }
  }
  return false;
}

TEST(RunReadAheadTest, TakesReadRunsResultForTheSameArgumentsOnly) {
  ScratchDir dir;
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile f,
                              IndexedTFRecordFile::Open(WriteFile(dir, "a.tfrecord")));
  Rig rig;
  RunReadAhead ra(rig.ctx, &rig.counters, 2);
  // Records 10, 12, 14 (stride 2 within 130 bytes: five framed records).
  const RunReadAhead::RunKey key{10, 130, 2};
  Result<std::vector<Record>> got = std::vector<Record>();
  ASSERT_TRUE(TakeReadAhead(ra, f, key, &got));
  SLUICE_ASSERT_OK(got.status());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::vector<Record> want, f.ReadRun(10, 130, 2));
  EXPECT_EQ(Texts(*got), Texts(want));
  EXPECT_EQ(Texts(*got), (std::vector<std::string>{Text(10), Text(12), Text(14)}));
  EXPECT_EQ((*got)[0].number, 10u);
  EXPECT_EQ(rig.counters.reads_ahead.load(), 1);
  EXPECT_EQ(rig.ctx.memory().used(), 0);  // the charge went with it

  // Other arguments: nothing, and the read-ahead is dropped.
  for (const RunReadAhead::RunKey& other :
       std::vector<RunReadAhead::RunKey>{{11, 130, 2}, {10, 131, 2}, {10, 130, 1}}) {
    ra.Start(f, 1, key);
    EXPECT_GT(rig.ctx.memory().used(), 0);
    EXPECT_FALSE(ra.Take(1, other).has_value());
    EXPECT_EQ(rig.ctx.memory().used(), 0);
    EXPECT_FALSE(ra.Take(1, key).has_value());  // gone
  }
  // Nothing started for that file.
  EXPECT_FALSE(ra.Take(0, key).has_value());
}

TEST(RunReadAheadTest, ErrorsComeBackAsReadRunReturnsThem) {
  ScratchDir dir;
  const std::string path = WriteFile(dir, "a.tfrecord");
  std::string bytes = ReadFileOrDie(path);
  bytes[7 * 26 + 12] ^= 0x5a;  // record 7's data: its checksum fails
  WriteFileOrDie(path, bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile f, IndexedTFRecordFile::Open(path));
  Rig rig;
  RunReadAhead ra(rig.ctx, &rig.counters, 1);
  // From record 4: the good records before the corrupt one.
  Result<std::vector<Record>> got = std::vector<Record>();
  ASSERT_TRUE(TakeReadAhead(ra, f, {4, 1 << 20, 1}, &got));
  SLUICE_ASSERT_OK(got.status());
  EXPECT_EQ(Texts(*got), (std::vector<std::string>{Text(4), Text(5), Text(6)}));
  // From the corrupt record itself: its error, naming the file and record.
  ASSERT_TRUE(TakeReadAhead(ra, f, {7, 1 << 20, 1}, &got));
  SLUICE_EXPECT_ERROR(got.status(), StatusCode::kDataLoss, path + ": record 7 at offset 182");
  EXPECT_EQ(f.ReadRun(7, 1 << 20, 1).status().ToString(), got.status().ToString());
}

TEST(RunReadAheadTest, StartsNothingPastTheRamBudget) {
  ScratchDir dir;
  SLUICE_ASSERT_OK_AND_ASSIGN(IndexedTFRecordFile f,
                              IndexedTFRecordFile::Open(WriteFile(dir, "a.tfrecord")));
  Rig rig({.cpu_budget = 2, .ram_budget = 1000, .autotune = false});
  RunReadAhead ra(rig.ctx, &rig.counters, 1);
  ra.Start(f, 0, {0, 1001, 1});
  EXPECT_EQ(rig.ctx.memory().used(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(ra.Take(0, {0, 1001, 1}).has_value());
  EXPECT_EQ(rig.counters.reads_ahead.load(), 0);
  // Within it, it is read ahead (charged for its max_bytes meanwhile).
  Result<std::vector<Record>> got = std::vector<Record>();
  ASSERT_TRUE(TakeReadAhead(ra, f, {0, 1000, 1}, &got));
  SLUICE_ASSERT_OK(got.status());
  EXPECT_EQ(got->size(), 38u);  // 38 x 26 = 988 bytes
}

TEST(RunReadAheadTest, DestructionWaitsForReadsAndReleasesEverything) {
  ScratchDir dir;
  std::vector<IndexedTFRecordFile> files;
  for (int i = 0; i < 8; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(
        IndexedTFRecordFile f,
        IndexedTFRecordFile::Open(WriteFile(dir, "f" + std::to_string(i) + ".tfrecord")));
    files.push_back(std::move(f));
  }
  Rig rig;
  for (int round = 0; round < 20; ++round) {
    {
      RunReadAhead ra(rig.ctx, &rig.counters, files.size());
      for (size_t i = 0; i < files.size(); ++i) ra.Start(files[i], i, {0, 1 << 20, 1});
      if (round % 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(rig.ctx.memory().used(), 0);
  }
}

// ---- RecordBlock -------------------------------------------------------------

std::vector<std::string> Texts(const RecordBlock& b) {
  std::vector<std::string> v;
  for (const ReadItem& i : b.items) {
    if (!i.rec.ok())
      v.push_back("error");
    else
      v.emplace_back(i.rec->has_value() ? (*i.rec)->data : "end");
  }
  return v;
}

TEST(RecordBlockTest, BlocksEndAtTheirBytesAnErrorOrTheEnd) {
  ScratchDir dir;
  const std::string path = WriteFile(dir, "a.tfrecord");
  std::string bytes = ReadFileOrDie(path);
  bytes[7 * 26 + 12] ^= 0x5a;  // record 7's data
  WriteFileOrDie(path, bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader r, TFRecordReader::Open(path));
  Rig rig;
  RecordBlock b = ReadRecordBlock(r, 52, rig.ctx);  // two framed records
  EXPECT_EQ(Texts(b), (std::vector<std::string>{Text(0), Text(1)}));
  EXPECT_FALSE(b.stopped);
  EXPECT_EQ(b.after, 2u);
  EXPECT_EQ(b.items[1].before, 1u);
  b = ReadRecordBlock(r, 1, rig.ctx);  // at least one record
  EXPECT_EQ(Texts(b), (std::vector<std::string>{Text(2)}));
  b = ReadRecordBlock(r, 1 << 20, rig.ctx);
  EXPECT_EQ(Texts(b), (std::vector<std::string>{Text(3), Text(4), Text(5), Text(6), "error"}));
  EXPECT_TRUE(b.stopped);
  EXPECT_TRUE(b.items.back().moved);  // the framing held: passed
  EXPECT_EQ(b.items.back().before, 7u);
  b = ReadRecordBlock(r, 1 << 20, rig.ctx);
  EXPECT_EQ(b.items.size(), static_cast<size_t>(kRecords - 8 + 1));
  EXPECT_EQ(Texts(b).back(), "end");
  EXPECT_TRUE(b.stopped);
  EXPECT_EQ(b.after, static_cast<uint64_t>(kRecords));
}

TEST(RecordBlockTest, ReadAheadTakesTheNextBlockOfTheReaderOrGivesItBack) {
  ScratchDir dir;
  const std::string path = WriteFile(dir, "a.tfrecord");
  Rig rig;
  ReadAhead<RecordBlock> ra(rig.ctx, &rig.counters);
  auto next_block = [&](std::shared_ptr<TFRecordReader> r) {
    return [r, ctx = &rig.ctx] { return ReadRecordBlock(*r, 130, *ctx); };
  };
  // Through the file 5 records at a time, each block read ahead (or taken
  // back and read here); again while no block came from a task (a loaded
  // machine may start none in 20 ms), for at most 10 s.
  std::shared_ptr<TFRecordReader> reader;
  int ready = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ready == 0 && std::chrono::steady_clock::now() < deadline) {
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader opened, TFRecordReader::Open(path));
    reader = std::make_shared<TFRecordReader>(std::move(opened));
    SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordReader reference, TFRecordReader::Open(path));
    for (int n = 0; reader->next_record_number() < static_cast<uint64_t>(kRecords); ++n) {
      auto p = ra.Start(130, next_block(reader));  // 5 records
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(rig.ctx.memory().used(), 130);
      if (n % 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::optional<RecordBlock> b = ra.Take(p);
      EXPECT_EQ(p, nullptr);
      EXPECT_EQ(rig.ctx.memory().used(), 0);
      if (!b)
        b = ReadRecordBlock(*reader, 130, rig.ctx);  // taken back: read here
      else
        ++ready;
      EXPECT_EQ(Texts(*b), Texts(ReadRecordBlock(reference, 130, rig.ctx)));
    }
  }
  EXPECT_GT(ready, 0);
  EXPECT_EQ(rig.counters.reads_ahead.load(), ready);
  // Dropped: charges released, the reader kept alive by the task.
  auto p = ra.Start(130, next_block(reader));
  reader.reset();
  ra.Drop(p);
  EXPECT_EQ(rig.ctx.memory().used(), 0);
}

}  // namespace
}  // namespace sluice::pipeline_internal
