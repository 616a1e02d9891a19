// save / load / snapshot (pipeline/snapshot.h): round trips, the conformance
// suite on the reading side and on snapshot's writing pass, corrupt and
// incomplete folders, crash safety, concurrent readers.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "conformance.h"
#include "sluice/core/element_codec.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/snapshot_format.h"
#include "sluice/records/tfrecord_format.h"
#include "test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::Int64Elements;
using testing::ReadAll;
using testing::RunConformance;
using testing::ScratchDir;

Dataset Numbers(int64_t n) { return Dataset::range(n); }

Dataset Strings() {
  return Dataset::from_tensor_slices({*Tensor::FromStrings(
      std::vector<std::string>{"a", "", "hello", std::string("\0x\xff", 3)})});
}

Dataset Pairs(int64_t n) {  // (int64, float32[2]) unnamed
  return Dataset::range(n).map([](Element e) {
    const int64_t v = e[0].scalar<int64_t>();
    Tensor f = *Tensor::Zeros(DType::kFloat32, Shape{2});
    f.flat<float>()[0] = static_cast<float>(v);
    f.flat<float>()[1] = 0.5f;
    return Element({Tensor::Scalar<int64_t>(v * 10), std::move(f)});
  });
}

Dataset Named() {
  return Dataset::from_tensor_slices(
      {*Tensor::FromVector<int64_t>({1, 2, 3}),
       *Tensor::FromStrings(std::vector<std::string>{"x", "yy", "zzz"})},
      {"id", "text"});
}

// range(n) through a map counting its calls.
Dataset Counting(int64_t n, std::atomic<int>* calls, const std::string& name = "count") {
  return Dataset::range(n).map(
      [calls](Element e) {
        ++*calls;
        return e;
      },
      {.name = name});
}

Status ReadStatus(const Dataset& ds) {
  if (!ds.status().ok()) return ds.status();
  Result<Iterator> it = ds.iterator();
  if (!it.ok()) return it.status();
  while (true) {
    Result<std::optional<Element>> e = it->next();
    if (!e.ok()) return e.status();
    if (!*e) return Status::OK();
  }
}

std::string Meta(const std::string& dir) {
  return testing::ReadFileOrDie(dir + "/snapshot.metadata");
}

TEST(SaveLoadTest, RoundTripsNumericStringMultiComponentAndNamed) {
  const std::vector<std::pair<std::string, Dataset>> cases = {{"numeric", Numbers(11)},
                                                              {"string", Strings()},
                                                              {"pairs", Pairs(7)},
                                                              {"named", Named()},
                                                              {"empty", Numbers(0)}};
  for (const auto& [name, ds] : cases) {
    SCOPED_TRACE(name);
    ScratchDir dir;
    SLUICE_ASSERT_OK(ds.save(dir.path()));
    Dataset back = Dataset::load(dir.path());
    SLUICE_ASSERT_OK(back.status());
    EXPECT_EQ(ReadAll(back), ReadAll(ds));
    EXPECT_EQ(back.cardinality(), static_cast<int64_t>(ReadAll(ds).size()));
    if (ds.element_spec().known()) {
      EXPECT_EQ(back.element_spec(), ds.element_spec());
    }
  }
}

TEST(SaveLoadTest, ObjectStoreFoldersAreAClearError) {
  const Dataset ds = Dataset::range(3);
  const Status saved = ds.save("s3://bucket/saved");
  EXPECT_EQ(saved.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(saved.message().find("s3://bucket/saved"), std::string::npos);
  EXPECT_NE(saved.message().find("local disk"), std::string::npos);
  EXPECT_EQ(Dataset::load("s3://bucket/saved").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ds.snapshot("gs://bucket/snap").status().code(), StatusCode::kFailedPrecondition);
}

TEST(SaveLoadTest, UnknownSpecIsLearntFromTheElements) {
  ScratchDir dir;
  Dataset ds = Pairs(3);
  ASSERT_FALSE(ds.element_spec().known());
  SLUICE_ASSERT_OK(ds.save(dir.path()));
  Dataset back = Dataset::load(dir.path());
  EXPECT_EQ(back.element_spec().DebugString(), "(int64[], float32[2])");
}

TEST(SaveLoadTest, Compression) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    ScratchDir dir;
    SLUICE_ASSERT_OK(Numbers(20).save(dir.path(), {.compression = c}));
    EXPECT_NE(Meta(dir.path()).find("\"compression\": \"" + std::string(CompressionName(c))),
              std::string::npos);
    const std::string shard = testing::ReadFileOrDie(dir.file("shard-00000.tfrecord"));
    if (c == Compression::kGzip) {
      EXPECT_EQ(shard.substr(0, 2), "\x1f\x8b");
    }
    EXPECT_EQ(ReadAll(Dataset::load(dir.path())), ReadAll(Numbers(20)));
    EXPECT_EQ(ReadAll(Dataset::load(dir.path(), {.compression = c})), ReadAll(Numbers(20)));
    Dataset wrong = Dataset::load(dir.path(), {.compression = Compression::kNone});
    EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  }
}

TEST(SaveLoadTest, DefaultShardingIsRoundRobinOverFourFiles) {
  ScratchDir dir;
  SLUICE_ASSERT_OK(Numbers(10).save(dir.path()));
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(fs::exists(dir.file("shard-0000" + std::to_string(i) + ".tfrecord")));
  auto m = pipeline_internal::ReadSnapshotMetadata(dir.path());
  SLUICE_ASSERT_OK(m);
  ASSERT_EQ(m->shards.size(), 4u);
  EXPECT_EQ(m->shards[0].num_elements, 3);
  EXPECT_EQ(m->shards[3].num_elements, 2);
  EXPECT_TRUE(m->complete);
}

TEST(SaveLoadTest, ShardFuncAndReaderFunc) {
  ScratchDir dir;
  ShardFn first_two = [](const Element& e) -> Result<int64_t> {
    return e[0].scalar<int64_t>() < 2 ? 0 : 7;
  };
  SLUICE_ASSERT_OK(Numbers(5).save(dir.path(), {.shard_func = first_two}));
  EXPECT_TRUE(fs::exists(dir.file("shard-00000.tfrecord")));
  EXPECT_TRUE(fs::exists(dir.file("shard-00007.tfrecord")));
  // Default reader: one element from each shard in turn.
  EXPECT_EQ(ReadAll(Dataset::load(dir.path())), Int64Elements({0, 2, 1, 3, 4}));
  // A reader_func concatenating the shards.
  ReaderFn concat = [](const std::vector<Dataset>& shards) -> Result<Dataset> {
    Dataset out = shards[0];
    for (size_t i = 1; i < shards.size(); ++i) out = out.concatenate(shards[i]);
    return out;
  };
  Dataset back = Dataset::load(dir.path(), {.reader_func = concat});
  EXPECT_EQ(ReadAll(back), Int64Elements({0, 1, 2, 3, 4}));
  EXPECT_EQ(back.cardinality(), 5);
}

TEST(SaveLoadTest, BadArguments) {
  ScratchDir dir;
  Status neg = Numbers(3).save(
      dir.path(), {.shard_func = [](const Element&) -> Result<int64_t> { return -1; }});
  EXPECT_EQ(neg.code(), StatusCode::kInvalidArgument) << neg;
  EXPECT_NE(neg.ToString().find("shard_func returned -1"), std::string::npos) << neg;
  EXPECT_EQ(Numbers(3).save(dir.path(), {.num_shards = 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Numbers(3).repeat().save(dir.path()).code(), StatusCode::kInvalidArgument);
  Status many = Numbers(kMaxSnapshotShards + 1)
                    .save(dir.path(), {.shard_func = [](const Element& e) -> Result<int64_t> {
                            return e[0].scalar<int64_t>();
                          }});
  EXPECT_EQ(many.code(), StatusCode::kInvalidArgument) << many;
  // A failed save leaves an incomplete folder, which load refuses.
  EXPECT_EQ(Dataset::load(dir.path()).status().code(), StatusCode::kFailedPrecondition);
  Dataset failing = Numbers(5).map([](Element e) -> Result<Element> {
    if (e[0].scalar<int64_t>() == 3) return Status::DataLoss("bad three");
    return e;
  });
  EXPECT_EQ(failing.save(dir.path()).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Dataset::load(dir.path()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Numbers(3).snapshot("").status().code(), StatusCode::kInvalidArgument);
}

TEST(SaveLoadTest, ElementSpecGivenToLoad) {
  ScratchDir dir;
  SLUICE_ASSERT_OK(Named().save(dir.path()));
  ElementSpec looser(
      {{"id", DType::kInt64, Shape::UnknownRank()}, {"text", DType::kString, Shape{}}});
  Dataset ok = Dataset::load(dir.path(), {.element_spec = looser});
  SLUICE_ASSERT_OK(ok.status());
  EXPECT_EQ(ok.element_spec(), looser);
  ElementSpec wrong({{"id", DType::kInt32, Shape{}}, {"text", DType::kString, Shape{}}});
  Dataset bad = Dataset::load(dir.path(), {.element_spec = wrong});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status();
}

TEST(SaveLoadTest, MissingIncompleteAndCorruptMetadata) {
  ScratchDir dir;
  Dataset missing = Dataset::load(dir.path());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().ToString().find(dir.file("snapshot.metadata")), std::string::npos);
  SLUICE_ASSERT_OK(Numbers(4).save(dir.path()));
  std::string meta = Meta(dir.path());
  testing::WriteFileOrDie(dir.file("snapshot.metadata"), meta.substr(0, meta.size() / 2));
  Dataset corrupt = Dataset::load(dir.path());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kDataLoss) << corrupt.status();
  EXPECT_NE(corrupt.status().ToString().find("snapshot.metadata"), std::string::npos);
  std::string incomplete = meta;
  incomplete.replace(incomplete.find("\"complete\": true"), 16, "\"complete\": false");
  testing::WriteFileOrDie(dir.file("snapshot.metadata"), incomplete);
  EXPECT_EQ(Dataset::load(dir.path()).status().code(), StatusCode::kFailedPrecondition);
  // A shard count that does not add up.
  std::string lying = meta;
  lying.replace(lying.find("\"num_elements\": 4"), 17, "\"num_elements\": 5");
  testing::WriteFileOrDie(dir.file("snapshot.metadata"), lying);
  EXPECT_EQ(Dataset::load(dir.path()).status().code(), StatusCode::kDataLoss);
}

TEST(SaveLoadTest, TruncatedAndCorruptShardsNameFileAndOffset) {
  ScratchDir dir;
  SLUICE_ASSERT_OK(Numbers(8).save(dir.path(), {.num_shards = 1}));
  const std::string shard = dir.file("shard-00000.tfrecord");
  const std::string bytes = testing::ReadFileOrDie(shard);
  const size_t record = bytes.size() / 8;
  // Cut inside the last record.
  testing::WriteFileOrDie(shard, bytes.substr(0, bytes.size() - 3));
  Status s = ReadStatus(Dataset::load(dir.path()));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.ToString().find(shard), std::string::npos) << s;
  EXPECT_NE(s.ToString().find(std::to_string(7 * record)), std::string::npos) << s;
  // Cut on a record boundary: the count in the metadata catches it.
  testing::WriteFileOrDie(shard, bytes.substr(0, 6 * record));
  s = ReadStatus(Dataset::load(dir.path()));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.ToString().find(shard + " is truncated: it ends at offset " +
                              std::to_string(6 * record) + " after 6 of the 8"),
            std::string::npos)
      << s;
  // A flipped byte in a record's data: its CRC.
  std::string flipped = bytes;
  flipped[3 * record + 14] ^= 0x40;
  testing::WriteFileOrDie(shard, flipped);
  s = ReadStatus(Dataset::load(dir.path()));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.ToString().find(std::to_string(3 * record)), std::string::npos) << s;
  // A missing shard file.
  fs::remove(shard);
  s = ReadStatus(Dataset::load(dir.path()));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_NE(s.ToString().find(shard), std::string::npos) << s;
}

TEST(SaveLoadTest, OverwritingASaveRemovesItsOldShards) {
  ScratchDir dir;
  SLUICE_ASSERT_OK(Numbers(10).save(dir.path(), {.num_shards = 4}));
  SLUICE_ASSERT_OK(Numbers(3).save(dir.path(), {.num_shards = 2}));
  EXPECT_FALSE(fs::exists(dir.file("shard-00002.tfrecord")));
  EXPECT_EQ(ReadAll(Dataset::load(dir.path())), Int64Elements({0, 1, 2}));
}

TEST(SaveLoadTest, ConformanceOfTheReadingSide) {
  ScratchDir dir;
  SLUICE_ASSERT_OK(Numbers(23).save(dir.path(), {.compression = Compression::kGzip}));
  std::vector<int64_t> want;
  for (int i = 0; i < 23; ++i) want.push_back(i);
  RunConformance({.name = "load",
                  .make = [&](int) { return Dataset::load(dir.path()); },
                  .expected = Int64Elements(want)});
  RunConformance(
      {.name = "load then parallel map",
       .make =
           [&](int p) {
             return Dataset::load(dir.path()).map([](Element e) { return e; }, {.parallelism = p});
           },
       .expected = Int64Elements(want)});
}

TEST(SaveLoadTest, ConcurrentReaders) {
  ScratchDir dir;
  SLUICE_ASSERT_OK(Numbers(500).save(dir.path()));
  Dataset ds = Dataset::load(dir.path());
  const std::vector<std::string> want = ReadAll(Numbers(500));
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      if (ReadAll(ds) == want && ReadAll(Dataset::load(dir.path())) == want) ++good;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 6);
}

// ------------------------------------------------------------------ snapshot

TEST(SnapshotTest, FirstRunWritesLaterRunsRead) {
  ScratchDir dir;
  std::atomic<int> calls{0};
  Dataset ds = Counting(10, &calls).snapshot(dir.path());
  EXPECT_EQ(ReadAll(ds), Int64Elements({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(calls.load(), 10);
  const std::string run = SnapshotRunPath(Counting(10, &calls), dir.path());
  EXPECT_NE(Meta(run).find("\"complete\": true"), std::string::npos);
  EXPECT_EQ(ReadAll(ds), Int64Elements({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(calls.load(), 10) << "the second run read the input again";
  // The same pipeline built again (a later process) reads it too.
  Dataset again = Counting(10, &calls).snapshot(dir.path());
  EXPECT_EQ(ReadAll(again).size(), 10u);
  EXPECT_EQ(calls.load(), 10);
  EXPECT_EQ(again.cardinality(), 10);
  // The snapshot folder is a save folder.
  EXPECT_EQ(ReadAll(Dataset::load(run)), ReadAll(Numbers(10)));
}

TEST(SnapshotTest, AnotherPipelineWritesBesideAndSaysSo) {
  ScratchDir dir;
  std::atomic<int> calls{0};
  ReadAll(Counting(5, &calls, "a").snapshot(dir.path()));
  ::testing::internal::CaptureStderr();
  ReadAll(Counting(5, &calls, "b").snapshot(dir.path()));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls.load(), 10);
  EXPECT_NE(err.find("holds snapshots of other pipelines"), std::string::npos) << err;
  int runs = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) runs += e.is_directory();
  EXPECT_EQ(runs, 2);
}

TEST(SnapshotTest, FingerprintMismatchInTheFolderIsRefused) {
  ScratchDir dir;
  std::atomic<int> calls{0};
  Dataset a = Counting(4, &calls, "a");
  Dataset b = Counting(4, &calls, "b");
  ReadAll(a.snapshot(dir.path()));
  // b's folder holds a's snapshot (copied by hand).
  fs::copy(SnapshotRunPath(a, dir.path()), SnapshotRunPath(b, dir.path()));
  Status s = ReadStatus(b.snapshot(dir.path()));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.ToString().find("fingerprint"), std::string::npos) << s;
}

TEST(SnapshotTest, IteratorDestroyedMidWriteLeavesNoSnapshot) {
  ScratchDir dir;
  std::atomic<int> calls{0};
  Dataset ds = Counting(10, &calls).snapshot(dir.path(), {.compression = Compression::kZlib});
  const std::string run = SnapshotRunPath(Counting(10, &calls), dir.path());
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
    for (int i = 0; i < 4; ++i) SLUICE_ASSERT_OK(it.next());
    EXPECT_NE(Meta(run).find("\"complete\": false"), std::string::npos);
  }
  EXPECT_NE(Meta(run).find("\"complete\": false"), std::string::npos);
  EXPECT_EQ(Dataset::load(run).status().code(), StatusCode::kFailedPrecondition);
  for (const auto& e : fs::directory_iterator(run)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  // The next run writes it again, from the start.
  calls = 0;
  EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(10)));
  EXPECT_EQ(calls.load(), 10);
  EXPECT_NE(Meta(run).find("\"complete\": true"), std::string::npos);
  EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(10)));
  EXPECT_EQ(calls.load(), 10);
}

TEST(SnapshotTest, AKilledWritersFilesAreRemovedAndTheWriteRestarts) {
  ScratchDir dir;
  std::atomic<int> calls{0};
  Dataset input = Counting(6, &calls);
  const std::string run = SnapshotRunPath(input, dir.path());
  fs::create_directories(run);
  // What a killed writer leaves: temporary shards (no lock held), shards it
  // had published, and the metadata marked incomplete.
  testing::WriteFileOrDie(run + "/.shard-00000.tfrecord.tmp-dead0001", "partial");
  testing::WriteFileOrDie(run + "/shard-00009.tfrecord", "stale");
  pipeline_internal::SnapshotMetadata dead;
  dead.complete = false;
  dead.fingerprint = std::stoull(run.substr(run.size() - 16), nullptr, 16);
  testing::WriteFileOrDie(run + "/snapshot.metadata",
                          pipeline_internal::EncodeSnapshotMetadata(dead));
  EXPECT_EQ(ReadAll(input.snapshot(dir.path())), ReadAll(Numbers(6)));
  EXPECT_FALSE(fs::exists(run + "/.shard-00000.tfrecord.tmp-dead0001"));
  EXPECT_FALSE(fs::exists(run + "/shard-00009.tfrecord"));
  EXPECT_EQ(ReadAll(Dataset::load(run)), ReadAll(Numbers(6)));
}

TEST(SnapshotTest, ASecondIteratorWhileOneWritesPassesThrough) {
  ScratchDir dir;
  std::atomic<int> calls{0};
  Dataset ds = Counting(6, &calls).snapshot(dir.path());
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator a, ds.iterator());
  SLUICE_ASSERT_OK(a.next());
  EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(6)));  // passes through, writes nothing
  std::vector<std::string> rest;
  while (true) {
    auto e = a.next();
    SLUICE_ASSERT_OK(e);
    if (!*e) break;
  }
  calls = 0;
  EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(6)));
  EXPECT_EQ(calls.load(), 0);
}

// The conformance suite restores mostly reading iterators (its first pass
// writes); here every save is taken mid-write, and restored both while the
// snapshot is still missing and after another pass completed it.
TEST(SnapshotTest, SaveRestoreMidWriteIsExact) {
  ScratchDir dir;
  const std::vector<std::string> all = ReadAll(Numbers(9));
  for (int k = 0; k <= 9; ++k) {
    for (bool finish_first : {false, true}) {
      SCOPED_TRACE("k " + std::to_string(k) + (finish_first ? " finished" : " abandoned"));
      const std::string path = dir.path() + "/" + std::to_string(k) + (finish_first ? "f" : "a");
      Dataset ds = Numbers(9).shuffle(4, {.seed = 3}).snapshot(path);
      const std::vector<std::string> want = ReadAll(Numbers(9).shuffle(4, {.seed = 3}));
      std::string state;
      {
        SLUICE_ASSERT_OK_AND_ASSIGN(Iterator a, ds.iterator());
        for (int i = 0; i < k; ++i) SLUICE_ASSERT_OK(a.next());
        SLUICE_ASSERT_OK_AND_ASSIGN(state, a.save());
        if (finish_first) {
          while (true) {
            auto e = a.next();
            SLUICE_ASSERT_OK(e);
            if (!*e) break;
          }
        }
      }
      SLUICE_ASSERT_OK_AND_ASSIGN(Iterator b, ds.iterator());
      SLUICE_ASSERT_OK(b.restore(state));
      std::vector<std::string> rest;
      while (true) {
        auto e = b.next();
        SLUICE_ASSERT_OK(e);
        if (!*e) break;
        rest.push_back((*e)->DebugString(1000));
      }
      EXPECT_EQ(rest, std::vector<std::string>(want.begin() + k, want.end()));
      // The restored iterator went on writing (or the first one finished):
      // the snapshot is complete either way.
      const std::string run = SnapshotRunPath(Numbers(9).shuffle(4, {.seed = 3}), path);
      EXPECT_NE(Meta(run).find("\"complete\": true"), std::string::npos);
      EXPECT_EQ(ReadAll(Dataset::load(run)), want);
      EXPECT_FALSE(fs::exists(run + "/snapshot.progress"));
    }
  }
}

// ---------------------------------------------------------- resumed writes

// Reads k elements of a fresh writing iterator over `ds`, then destroys it.
void Interrupt(const Dataset& ds, int k) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  for (int i = 0; i < k; ++i) SLUICE_ASSERT_OK(it.next());
}

// Replaces the first record of a partial shard (an int64 scalar) by
// `value`, with a valid CRC: a write that rewrote the shard would lose it.
void ReplaceFirstRecord(const std::string& path, int64_t value) {
  std::string bytes = testing::ReadFileOrDie(path);
  std::string record;
  ASSERT_TRUE(EncodeElement(Element({Tensor::Scalar<int64_t>(value)}), &record).ok());
  const uint64_t len = tfrecord::DecodeFixed64(reinterpret_cast<const uint8_t*>(bytes.data()));
  ASSERT_EQ(len, record.size());
  bytes.replace(tfrecord::kHeaderSize, record.size(), record);
  uint8_t footer[4];
  tfrecord::EncodeFixed32(crc32c::Mask(crc32c::Value(record)), footer);
  bytes.replace(tfrecord::kHeaderSize + record.size(), 4, reinterpret_cast<char*>(footer), 4);
  testing::WriteFileOrDie(path, bytes);
}

TEST(SnapshotTest, AnInterruptedWriteResumesWithoutRewriting) {
  ScratchDir dir;
  std::atomic<int> calls{0};
  // 13 elements read, progress every 5: the progress file says 10.
  Dataset ds = Counting(23, &calls).snapshot(dir.path(), {.progress_every = 5});
  const std::string run = SnapshotRunPath(Counting(23, &calls), dir.path());
  Interrupt(ds, 13);
  EXPECT_NE(Meta(run).find("\"complete\": false"), std::string::npos);
  SLUICE_ASSERT_OK_AND_ASSIGN(pipeline_internal::SnapshotProgress p,
                              pipeline_internal::ReadSnapshotProgress(run));
  EXPECT_EQ(p.num_elements, 10);
  ASSERT_EQ(p.shards.size(), 4u);
  EXPECT_EQ(p.shards[0].num_elements, 3);  // 0, 4, 8
  EXPECT_EQ(p.shards[3].num_elements, 2);  // 3, 7
  for (int i = 0; i < 4; ++i) {
    EXPECT_GE(static_cast<int64_t>(fs::file_size(run + "/" + p.shards[i].file)), p.shards[i].bytes);
  }
  ReplaceFirstRecord(run + "/.shard-00000.tfrecord.partial", 1000);
  // The next iterator hands out the input's elements, in order.
  calls = 0;
  EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(23)));
  EXPECT_EQ(calls.load(), 23);
  EXPECT_NE(Meta(run).find("\"complete\": true"), std::string::npos);
  for (const auto& e : fs::directory_iterator(run)) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.ends_with(".partial") || name == "snapshot.progress") << name;
  }
  // Elements 1..22 as written; element 0 is the one planted in the partial
  // shard: the resumed write kept the first 10 elements' bytes.
  std::vector<std::string> want = ReadAll(Numbers(23));
  want[0] = Element({Tensor::Scalar<int64_t>(1000)}).DebugString(1000);
  EXPECT_EQ(ReadAll(Dataset::load(run)), want);
  EXPECT_EQ(ReadAll(ds), want);  // later runs read it
}

TEST(SnapshotTest, AResumedWriteIsCompleteAndEqual) {
  for (int k : {0, 3, 5, 7, 12, 21, 23}) {
    SCOPED_TRACE("k " + std::to_string(k));
    ScratchDir dir;
    std::atomic<int> calls{0};
    Dataset ds = Counting(23, &calls).snapshot(dir.path(), {.num_shards = 3, .progress_every = 4});
    Interrupt(ds, k);
    EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(23)));
    const std::string run = SnapshotRunPath(Counting(23, &calls), dir.path());
    EXPECT_EQ(ReadAll(Dataset::load(run)), ReadAll(Numbers(23)));
    // Twice interrupted.
    ScratchDir dir2;
    Dataset ds2 =
        Counting(23, &calls).snapshot(dir2.path(), {.num_shards = 3, .progress_every = 4});
    Interrupt(ds2, k);
    Interrupt(ds2, std::min(k + 6, 23));
    EXPECT_EQ(ReadAll(ds2), ReadAll(Numbers(23)));
    EXPECT_EQ(ReadAll(Dataset::load(SnapshotRunPath(Counting(23, &calls), dir2.path()))),
              ReadAll(Numbers(23)));
  }
}

TEST(SnapshotTest, AResumedWriteWithAShardFunc) {
  ScratchDir dir;
  SnapshotOptions o;
  o.shard_func = [](const Element& e) -> Result<int64_t> { return e[0].scalar<int64_t>() % 3; };
  o.reader_func = [](const std::vector<Dataset>& shards) -> Result<Dataset> {
    return shards[0].concatenate(shards[1]).concatenate(shards[2]);
  };
  o.progress_every = 4;
  Dataset ds = Numbers(14).snapshot(dir.path(), o);
  Interrupt(ds, 9);
  EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(14)));
  EXPECT_EQ(ReadAll(ds), Int64Elements({0, 3, 6, 9, 12, 1, 4, 7, 10, 13, 2, 5, 8, 11}));
}

TEST(SnapshotTest, ABadProgressFileRestartsTheWrite) {
  for (int bad = 0; bad < 4; ++bad) {
    SCOPED_TRACE("bad " + std::to_string(bad));
    ScratchDir dir;
    std::atomic<int> calls{0};
    Dataset ds = Counting(17, &calls).snapshot(dir.path(), {.progress_every = 3});
    const std::string run = SnapshotRunPath(Counting(17, &calls), dir.path());
    Interrupt(ds, 11);
    const std::string progress = run + "/snapshot.progress";
    SLUICE_ASSERT_OK_AND_ASSIGN(pipeline_internal::SnapshotProgress p,
                                pipeline_internal::ReadSnapshotProgress(run));
    ASSERT_EQ(p.num_elements, 9);
    if (bad == 0) testing::WriteFileOrDie(progress, "{\"format\": \"sluice.snapshot.progress\", ");
    if (bad == 1) {
      p.fingerprint ^= 1;
      testing::WriteFileOrDie(progress, pipeline_internal::EncodeSnapshotProgress(p));
    }
    if (bad == 2) {  // a partial shard shorter than the progress says
      fs::resize_file(run + "/" + p.shards[1].file, p.shards[1].bytes - 3);
    }
    if (bad == 3) {  // another sharding
      p.sharding = 2;
      testing::WriteFileOrDie(progress, pipeline_internal::EncodeSnapshotProgress(p));
    }
    ::testing::internal::CaptureStderr();
    calls = 0;
    EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(17)));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("not resuming"), std::string::npos) << err;
    EXPECT_EQ(calls.load(), 17);
    EXPECT_EQ(ReadAll(Dataset::load(run)), ReadAll(Numbers(17)));
  }
}

TEST(SnapshotTest, CompressedWritesRestart) {
  ScratchDir dir;
  Dataset ds =
      Numbers(12).snapshot(dir.path(), {.compression = Compression::kGzip, .progress_every = 2});
  const std::string run = SnapshotRunPath(Numbers(12), dir.path());
  Interrupt(ds, 7);
  EXPECT_FALSE(fs::exists(run + "/snapshot.progress"));
  EXPECT_EQ(ReadAll(ds), ReadAll(Numbers(12)));
  EXPECT_EQ(ReadAll(Dataset::load(run)), ReadAll(Numbers(12)));
}

// Iterators started at once on threads: one writes, the others pass their
// input through; all see every element; then readers run at once.
TEST(SnapshotTest, ConcurrentWritersAndReaders) {
  ScratchDir dir;
  Dataset ds = Numbers(300).snapshot(dir.path(), {.compression = Compression::kGzip});
  const std::vector<std::string> want = ReadAll(Numbers(300));
  for (int round = 0; round < 2; ++round) {
    std::atomic<int> good{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        if (ReadAll(ds) == want) ++good;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(good.load(), 4);
    EXPECT_NE(Meta(SnapshotRunPath(Numbers(300), dir.path())).find("\"complete\": true"),
              std::string::npos);
  }
}

TEST(SnapshotTest, ConformanceOfTheReadingSide) {
  ScratchDir dir;
  auto make = [&](int) { return Pairs(17).snapshot(dir.path(), {.num_shards = 3}); };
  const std::vector<std::string> want = ReadAll(Pairs(17));
  ASSERT_EQ(ReadAll(make(1)), want);  // writes
  RunConformance({.name = "snapshot read", .make = make, .expected = want});
}

TEST(SnapshotTest, ConformanceOfTheWritingPass) {
  ScratchDir dir;
  std::atomic<int> n{0};
  // A fresh folder per dataset: its first iterator writes.
  auto make = [&](int p) {
    return Dataset::range(19)
        .map([](Element e) { return e; }, {.parallelism = p})
        .snapshot(dir.path() + "/" + std::to_string(n++));
  };
  std::vector<int64_t> want;
  for (int i = 0; i < 19; ++i) want.push_back(i);
  auto failing_input = [] {
    return Dataset::range(10).map([](Element e) -> Result<Element> {
      if (e[0].scalar<int64_t>() == 6) return Status::DataLoss("bad six");
      return e;
    });
  };
  RunConformance({.name = "snapshot write",
                  .make = make,
                  .expected = Int64Elements(want),
                  .make_failing = [&] { return failing_input().snapshot(dir.path() + "/f"); },
                  .error_substring = "bad six"});
  // The failed passes left an incomplete snapshot.
  const std::string run = SnapshotRunPath(failing_input(), dir.path() + "/f");
  EXPECT_EQ(Dataset::load(run).status().code(), StatusCode::kFailedPrecondition);
}

TEST(SnapshotTest, ShardFuncAndReaderFunc) {
  ScratchDir dir;
  SnapshotOptions o;
  o.shard_func = [](const Element& e) -> Result<int64_t> { return e[0].scalar<int64_t>() % 2; };
  o.reader_func = [](const std::vector<Dataset>& shards) -> Result<Dataset> {
    return shards[1].concatenate(shards[0]);
  };
  Dataset ds = Numbers(6).snapshot(dir.path(), o);
  EXPECT_EQ(ReadAll(ds), Int64Elements({0, 1, 2, 3, 4, 5}));  // the writing pass
  EXPECT_EQ(ReadAll(ds), Int64Elements({1, 3, 5, 0, 2, 4}));  // read by reader_func
}

// ------------------------------------------------------------------ format

// The golden bytes of a tiny save (docs/formats.md, "Saved datasets and
// snapshots"): from_tensor_slices(int64 [7, -1]) in one shard. The bytes
// were computed apart from sluice (Python: struct and a bitwise CRC-32C).
TEST(SaveFormatTest, GoldenBytes) {
  ScratchDir dir;
  Dataset ds = Dataset::from_tensor_slices({*Tensor::FromVector<int64_t>({7, -1})});
  SLUICE_ASSERT_OK(ds.save(dir.path(), {.num_shards = 1}));
  const std::string shard = testing::ReadFileOrDie(dir.file("shard-00000.tfrecord"));
  // Per record: length 19 (uint64), its masked CRC-32C, the encoded element
  // (e1, 1 component, name "", dtype 3 = int64, rank 0, the value), the
  // data's masked CRC-32C.
  std::string hex;
  for (unsigned char c : shard) {
    static const char* d = "0123456789abcdef";
    hex += d[c >> 4];
    hex += d[c & 15];
  }
  EXPECT_EQ(hex,
            "1300000000000000"
            "0c91321b"
            "e1"
            "01000000"
            "00000000"
            "03"
            "00"
            "0700000000000000"
            "39f4a105"
            "1300000000000000"
            "0c91321b"
            "e1"
            "01000000"
            "00000000"
            "03"
            "00"
            "ffffffffffffffff"
            "2460103e");
  std::string meta = Meta(dir.path());
  const std::string fp = SnapshotRunPath(ds, "").substr(1);
  ASSERT_EQ(fp.size(), 16u);
  meta.replace(meta.find(fp), 16, "<fingerprint...>");
  EXPECT_EQ(meta,
            "{\n"
            "  \"format\": \"sluice.snapshot\",\n"
            "  \"version\": 1,\n"
            "  \"complete\": true,\n"
            "  \"fingerprint\": \"<fingerprint...>\",\n"
            "  \"compression\": \"none\",\n"
            "  \"num_elements\": 2,\n"
            "  \"element_spec\": [\n"
            "    {\"name\": \"\", \"dtype\": \"int64\", \"shape\": []}\n"
            "  ],\n"
            "  \"shards\": [\n"
            "    {\"id\": 0, \"file\": \"shard-00000.tfrecord\", \"num_elements\": 2}\n"
            "  ]\n"
            "}\n");
}

}  // namespace
}  // namespace sluice
