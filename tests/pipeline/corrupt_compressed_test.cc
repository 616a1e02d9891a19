// ignore_errors over damaged GZIP and ZLIB TFRecord files (issue 37 item
// 13), in every read path: num_parallel_reads 1 and 3 (blocks read ahead),
// files with and without an .idx beside them (compressed files are always
// read in order), interleave, and under a parallel map. Three files, one
// damage each:
//   file 0: record 5's data checksum fails inside an intact compressed
//           stream (the stream was compressed after the damage): that
//           record is skipped, the file goes on;
//   file 1: the deflate stream is corrupt right after records 0-9 (an
//           invalid block at a full-flush point): records 0-9 come out, the
//           error ends the file;
//   file 2: the file is cut 2 bytes into the block after records 0-9: the
//           same, with a truncation error.
// The tests assert exactly which records come out, in which order, and that
// each error names the file and the record's offset.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "ignore_errors_util.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::WriteFileOrDie;

constexpr int kFiles = 3;
constexpr int kRecords = 21;   // per file
constexpr int kIntact = 10;    // files 1 and 2: records before the damage
constexpr int kBadRecord = 5;  // file 0: the record whose checksum fails

std::string RecordText(int file, int record) {
  return "file " + std::to_string(file) + " record " + std::to_string(record);
}

// The offset of `record` in the uncompressed stream of any file (records of
// a file have the same lengths whatever the file number).
uint64_t OffsetOf(int record) {
  uint64_t offset = 0;
  for (int r = 0; r < record; ++r) offset += 16 + RecordText(0, r).size();
  return offset;
}

// `raw` compressed as one gzip or zlib stream, with a full flush (a byte
// boundary starting a new block) after `flush_at` bytes; *flushed gets the
// compressed size at that point.
std::string Compress(const std::string& raw, Compression c, size_t flush_at, size_t* flushed) {
  z_stream z{};
  EXPECT_EQ(
      deflateInit2(&z, 6, Z_DEFLATED, c == Compression::kGzip ? 31 : 15, 8, Z_DEFAULT_STRATEGY),
      Z_OK);
  std::string out(deflateBound(&z, raw.size()) + 64, '\0');
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(flush_at);
  EXPECT_EQ(deflate(&z, Z_FULL_FLUSH), Z_OK);
  *flushed = z.total_out;
  z.avail_in = static_cast<uInt>(raw.size() - flush_at);
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Writes the three damaged files of compression `c` (with PATH.idx beside
// them if `index`); returns their paths, and in *damage_at the compressed
// offset of file 1's corrupt block.
std::vector<std::string> WriteDamaged(const ScratchDir& dir, Compression c, bool index,
                                      size_t* damage_at) {
  std::vector<std::string> paths;
  for (int f = 0; f < kFiles; ++f) {
    const std::string path =
        dir.file("part-" + std::to_string(f) + (c == Compression::kGzip ? ".gz" : ".zz"));
    // The records (and the index, which lists uncompressed offsets), as the
    // writer makes them; then the stream replaced by the damaged one.
    TFRecordWriterOptions o;
    o.compression = c;
    o.write_index = index;
    auto w = TFRecordWriter::Open(path, o);
    EXPECT_TRUE(w.ok()) << w.status();
    TFRecordWriterOptions plain_options;
    auto plain = TFRecordWriter::Open(path + ".raw", plain_options);
    EXPECT_TRUE(plain.ok()) << plain.status();
    for (int r = 0; r < kRecords; ++r) {
      EXPECT_TRUE(w->Write(RecordText(f, r)).ok());
      EXPECT_TRUE(plain->Write(RecordText(f, r)).ok());
    }
    EXPECT_TRUE(w->Close().ok());
    EXPECT_TRUE(plain->Close().ok());
    std::string raw = ReadFileOrDie(path + ".raw");
    std::filesystem::remove(path + ".raw");
    if (f == 0) raw[OffsetOf(kBadRecord) + 12] ^= 0x5a;  // a data byte
    size_t flushed = 0;
    std::string bytes = Compress(raw, c, OffsetOf(kIntact), &flushed);
    if (f == 1) {
      bytes[flushed] = static_cast<char>(0xff);  // BFINAL 1, BTYPE 3: invalid
      *damage_at = flushed;
    }
    if (f == 2) bytes.resize(flushed + 2);
    WriteFileOrDie(path, bytes);
    paths.push_back(path);
  }
  return paths;
}

using Outcome = testing::IgnoredErrors;
using testing::ReadIgnoringErrors;

bool Lost(int f, int r) { return (f == 0 && r == kBadRecord) || (f > 0 && r >= kIntact); }

// What a round robin over the three files gives: record r of each file in
// turn, the damaged ones left out (files 1 and 2 leave the rotation at
// their error).
std::vector<std::string> RoundRobin() {
  std::vector<std::string> v;
  for (int r = 0; r < kRecords; ++r) {
    for (int f = 0; f < kFiles; ++f) {
      if (!Lost(f, r)) v.push_back(RecordText(f, r));
    }
  }
  return v;
}

std::vector<std::string> OneFileAfterAnother() {
  std::vector<std::string> v;
  for (int f = 0; f < kFiles; ++f) {
    for (int r = 0; r < kRecords; ++r) {
      if (!Lost(f, r)) v.push_back(RecordText(f, r));
    }
  }
  return v;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

struct Case {
  Compression compression;
  bool index;
};

class CorruptCompressedTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    files_ = WriteDamaged(dir_, GetParam().compression, GetParam().index, &damage_at_);
  }
  std::string Name() const {
    return GetParam().compression == Compression::kGzip ? "gzip" : "zlib";
  }
  // The three errors, each naming its file and where: the record and its
  // offset in the stream, or (the inflate error, as records/ words it) the
  // compressed byte.
  void ExpectErrors(const Outcome& o) const {
    EXPECT_EQ(o.skipped, 3);
    ASSERT_EQ(o.errors.size(), 3u);
    const std::vector<std::string> where = {
        files_[0] + ": record 5 at offset " + std::to_string(OffsetOf(kBadRecord)),
        files_[1] + ": corrupt " + Name() + " stream near byte " + std::to_string(damage_at_ + 1),
        files_[2] + ": record 10 at offset " + std::to_string(OffsetOf(kIntact))};
    const std::vector<std::string> what = {"data checksum", "invalid block type", "truncated"};
    for (int f = 0; f < kFiles; ++f) {
      const auto e = std::find_if(o.errors.begin(), o.errors.end(), [&](const std::string& s) {
        return s.find(files_[f] + ":") != std::string::npos;
      });
      ASSERT_NE(e, o.errors.end()) << "no error names " << files_[f];
      EXPECT_NE(e->find(where[f]), std::string::npos) << *e;
      EXPECT_NE(e->find(what[f]), std::string::npos) << *e;
    }
  }
  ScratchDir dir_;
  std::vector<std::string> files_;
  size_t damage_at_ = 0;
};

TEST_P(CorruptCompressedTest, OneFileAfterAnother) {
  const Dataset ds = TFRecordDataset(files_);
  ASSERT_EQ(ds.cardinality(), kUnknownCardinality);  // compressed: read in order, index or not
  const Outcome o = ReadIgnoringErrors(ds);
  EXPECT_EQ(o.records, OneFileAfterAnother());
  ExpectErrors(o);
}

TEST_P(CorruptCompressedTest, ParallelReadsKeepTheRotation) {
  // Whole files in one block, then blocks of one and of ~3 records, each
  // next block read (and inflated) ahead in a task: the same outcome.
  for (int64_t buffer : {int64_t{1} << 20, int64_t{1}, int64_t{100}}) {
    SCOPED_TRACE("buffer_size " + std::to_string(buffer));
    const Outcome o = ReadIgnoringErrors(
        TFRecordDataset(files_, {.buffer_size = buffer, .num_parallel_reads = 3}));
    EXPECT_EQ(o.records, RoundRobin());
    ExpectErrors(o);
  }
}

TEST_P(CorruptCompressedTest, UnderAParallelMap) {
  for (int64_t reads : {int64_t{1}, int64_t{3}}) {
    SCOPED_TRACE("num_parallel_reads " + std::to_string(reads));
    const Outcome o = ReadIgnoringErrors(
        TFRecordDataset(files_, {.buffer_size = 100, .num_parallel_reads = reads})
            .map([](Element e) { return e; }, {.parallelism = 4}));
    EXPECT_EQ(o.records, reads == 1 ? OneFileAfterAnother() : RoundRobin());
    ExpectErrors(o);
  }
}

TEST_P(CorruptCompressedTest, Interleave) {
  for (int64_t parallelism : {int64_t{1}, int64_t{3}}) {
    SCOPED_TRACE("parallelism " + std::to_string(parallelism));
    const Outcome o = ReadIgnoringErrors(
        Dataset::list_files(
            dir_.file(GetParam().compression == Compression::kGzip ? "*.gz" : "*.zz"))
            .interleave(tfrecords(), {.cycle_length = 2, .parallelism = parallelism}));
    EXPECT_EQ(Sorted(o.records), Sorted(OneFileAfterAnother()));
    ExpectErrors(o);
  }
}

TEST_P(CorruptCompressedTest, RestoreMidwayGivesTheRest) {
  // Saved after k records (before and after file 0's bad record, in and
  // past the rotation), restored into a new iterator: the same remaining
  // records. Without an index the restore reads each file up to its record
  // again, over the bad one.
  for (int64_t reads : {int64_t{1}, int64_t{3}}) {
    const Dataset ds =
        TFRecordDataset(files_, {.buffer_size = 100, .num_parallel_reads = reads}).ignore_errors();
    const std::vector<std::string> all = reads == 1 ? OneFileAfterAnother() : RoundRobin();
    for (int k : {3, 12, 19, 25, 33}) {
      SCOPED_TRACE("num_parallel_reads " + std::to_string(reads) + ", saved after " +
                   std::to_string(k));
      SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
      for (int i = 0; i < k; ++i) {
        SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it.next());
        ASSERT_TRUE(e.has_value());
        EXPECT_EQ((*e)[0].scalar<std::string_view>(), all[i]);
      }
      SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, it.save());
      SLUICE_ASSERT_OK_AND_ASSIGN(Iterator restored, ds.iterator());
      SLUICE_ASSERT_OK(restored.restore(state));
      std::vector<std::string> rest;
      for (;;) {
        SLUICE_ASSERT_OK_AND_ASSIGN(auto e, restored.next());
        if (!e) break;
        rest.emplace_back((*e)[0].scalar<std::string_view>());
      }
      EXPECT_EQ(rest, std::vector<std::string>(all.begin() + k, all.end()));
    }
  }
}

TEST_P(CorruptCompressedTest, WithoutIgnoreErrorsTheFirstErrorEndsThePipeline) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, TFRecordDataset(files_).iterator());
  int read = 0;
  Status error;
  for (;;) {
    auto e = it.next();
    if (!e.ok()) {
      error = e.status();
      break;
    }
    if (!e->has_value()) break;
    ++read;
  }
  EXPECT_EQ(read, kBadRecord);
  SLUICE_EXPECT_ERROR(error, StatusCode::kDataLoss,
                      files_[0] + ": record 5 at offset " + std::to_string(OffsetOf(kBadRecord)));
}

INSTANTIATE_TEST_SUITE_P(
    , CorruptCompressedTest,
    ::testing::Values(Case{Compression::kGzip, false}, Case{Compression::kGzip, true},
                      Case{Compression::kZlib, false}, Case{Compression::kZlib, true}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.compression == Compression::kGzip ? "Gzip" : "Zlib") +
             (info.param.index ? "Indexed" : "");
    });

}  // namespace
}  // namespace sluice
