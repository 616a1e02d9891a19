// from_generator, list_files, TFRecordDataset, cache, global_shuffle and
// shard: conformance and semantics.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "conformance.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::Int64Elements;
using testing::ReadAll;
using testing::ReadFileOrDie;
using testing::RunConformance;
using testing::ScratchDir;
using testing::WriteFileOrDie;

std::vector<std::string> StringElements(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(Element({Tensor::StringScalar(v)}).DebugString(1000));
  return out;
}

std::string RecordText(int file, int record) {
  return "f" + std::to_string(file) + "r" + std::to_string(record);
}

// Writes files f0.. with the given record counts; returns their paths.
std::vector<std::string> WriteFiles(const ScratchDir& dir, const std::string& prefix,
                                    const std::vector<int>& counts, bool index,
                                    Compression compression = Compression::kNone) {
  std::vector<std::string> paths;
  for (size_t f = 0; f < counts.size(); ++f) {
    const std::string path = dir.file(prefix + std::to_string(f) + ".tfrecord");
    TFRecordWriterOptions o;
    o.write_index = index;
    o.compression = compression;
    auto w = TFRecordWriter::Open(path, o);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    for (int r = 0; r < counts[f]; ++r)
      EXPECT_TRUE(w->Write(RecordText(static_cast<int>(f), r)).ok());
    EXPECT_TRUE(w->Close().ok());
    paths.push_back(path);
  }
  return paths;
}

std::vector<std::string> Sequential(const std::vector<int>& counts) {
  std::vector<std::string> v;
  for (size_t f = 0; f < counts.size(); ++f) {
    for (int r = 0; r < counts[f]; ++r) v.push_back(RecordText(static_cast<int>(f), r));
  }
  return StringElements(v);
}

Dataset Counting(Dataset ds, std::atomic<int>* calls) {
  return ds.map([calls](Element e) {
    calls->fetch_add(1);
    return e;
  });
}

// ---- from_generator ------------------------------------------------------

std::function<GeneratorFn()> CountTo(int64_t n) {
  return [n] {
    auto i = std::make_shared<int64_t>(0);
    return GeneratorFn([i, n]() -> Result<std::optional<Element>> {
      if (*i >= n) return std::optional<Element>();
      return std::optional<Element>(Element({Tensor::Scalar<int64_t>((*i)++)}));
    });
  };
}

TEST(FromGeneratorTest, Conformance) {
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 20; ++i) want.push_back(i);
  RunConformance({.name = "from_generator",
                  .make =
                      [](int) {
                        return Dataset::from_generator(CountTo(20),
                                                       ElementSpec({{"", DType::kInt64, Shape{}}}));
                      },
                  .expected = Int64Elements(want)});
  EXPECT_EQ(Dataset::from_generator(CountTo(3)).cardinality(), kUnknownCardinality);
}

TEST(FromGeneratorTest, SpecMismatchNamesStage) {
  auto ds = Dataset::from_generator(CountTo(3), ElementSpec({{"", DType::kFloat32, Shape{}}}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  auto e = it.next();
  SLUICE_EXPECT_ERROR(e.status(), StatusCode::kInvalidArgument, "from_generator");
}

TEST(FromGeneratorTest, ErrorsNameStageAndElement) {
  auto ds = Dataset::from_generator([] {
    auto i = std::make_shared<int>(0);
    return GeneratorFn([i]() -> Result<std::optional<Element>> {
      if (*i == 2) return Status::DataLoss("boom");
      return std::optional<Element>(Element({Tensor::Scalar<int64_t>((*i)++)}));
    });
  });
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_ASSERT_OK(it.next().status());
  SLUICE_ASSERT_OK(it.next().status());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kDataLoss,
                      "stage 'from_generator' failed on element 2");
}

// ---- list_files -----------------------------------------------------------

TEST(ListFilesTest, SortedDedupedAndShuffled) {
  ScratchDir dir;
  for (const char* n : {"b.txt", "a2.txt", "a1.txt", "c.dat"}) WriteFileOrDie(dir.file(n), "x");
  auto ds = Dataset::list_files({dir.file("*.txt"), dir.file("a*")});
  SLUICE_ASSERT_OK(ds.status());
  EXPECT_EQ(ds.cardinality(), 3);
  const auto want = StringElements({dir.file("a1.txt"), dir.file("a2.txt"), dir.file("b.txt")});
  EXPECT_EQ(ReadAll(ds), want);
  RunConformance({.name = "list_files",
                  .make = [&](int) { return Dataset::list_files(dir.file("*.txt")); },
                  .expected = want});

  auto s1 = ReadAll(Dataset::list_files(dir.file("*"), {.shuffle = true, .seed = 3}));
  auto s2 = ReadAll(Dataset::list_files(dir.file("*"), {.shuffle = true, .seed = 3}));
  EXPECT_EQ(s1, s2);
  std::sort(s1.begin(), s1.end());
  EXPECT_EQ(s1, StringElements({dir.file("a1.txt"), dir.file("a2.txt"), dir.file("b.txt"),
                                dir.file("c.dat")}));
  // A new order each iteration (as tf.data), the same sequence of orders
  // for the same seed.
  for (int i = 0; i < 20; ++i) WriteFileOrDie(dir.file("n" + std::to_string(i)), "x");
  auto many = Dataset::list_files(dir.file("n*"), {.shuffle = true, .seed = 5});
  auto again = Dataset::list_files(dir.file("n*"), {.shuffle = true, .seed = 5});
  const auto first = ReadAll(many), second = ReadAll(many);
  EXPECT_NE(first, second);
  EXPECT_EQ(ReadAll(again), first);
  EXPECT_EQ(ReadAll(again), second);
  SLUICE_EXPECT_ERROR(Dataset::list_files(dir.file("*.none")).status(), StatusCode::kNotFound,
                      "list_files: no files match '" + dir.file("*.none") + "'");
}

// A folder the pattern needs that cannot be read is an error naming the
// pattern, the folder and the cause; glob(3) used to skip it silently (no
// match, or a shorter list). A symlink loop (ELOOP) fails even for root.
TEST(ListFilesTest, UnreadableFolderIsAnErrorNamingIt) {
  ScratchDir dir;
  std::filesystem::create_directory(dir.file("ok"));
  WriteFileOrDie(dir.file("ok/a.rec"), "x");
  WriteFileOrDie(dir.file("file"), "x");
  std::filesystem::create_directory_symlink("loop", dir.file("loop"));  // loop -> loop
  std::filesystem::create_directory_symlink("nowhere", dir.file("dangling"));
  const std::string pattern = dir.file("loop/*.rec");
  SLUICE_EXPECT_ERROR(Dataset::list_files(pattern).status(), StatusCode::kUnavailable,
                      "list_files: expanding '" + pattern + "': cannot read the folder '" +
                          dir.file("loop") + "': " + std::strerror(ELOOP));
  // With a readable pattern beside it: an error, not the shorter list.
  SLUICE_EXPECT_ERROR(Dataset::list_files({dir.file("ok/*.rec"), pattern}).status(),
                      StatusCode::kUnavailable, dir.file("loop"));
  // A folder that does not exist, or a file where a folder would be, holds
  // no match (NotFound if nothing else matches); a wildcard passing over
  // them lists what the real folders hold.
  SLUICE_EXPECT_ERROR(Dataset::list_files(dir.file("missing/*.rec")).status(),
                      StatusCode::kNotFound, "list_files: no files match");
  SLUICE_EXPECT_ERROR(Dataset::list_files(dir.file("file/*.rec")).status(), StatusCode::kNotFound,
                      "list_files: no files match");
  EXPECT_EQ(ReadAll(Dataset::list_files(dir.file("*/*.rec"))),
            StringElements({dir.file("ok/a.rec")}));
}

// The same for a folder without read permission (chmod 000). Root reads it
// anyway, so as root the listing runs in a thread that drops to nobody
// (65534) with the raw setresuid system call, which changes only the
// calling thread's credentials; skipped where that is not allowed.
TEST(ListFilesTest, FolderWithoutPermissionIsAnErrorNamingIt) {
  ScratchDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  std::filesystem::create_directory(dir.file("locked"));
  WriteFileOrDie(dir.file("locked/b.rec"), "x");
  std::filesystem::permissions(dir.file("locked"), std::filesystem::perms::none);
  const std::string pattern = dir.file("locked/*.rec");
  std::string skip;
  Status status;
  std::thread([&] {
    if (geteuid() == 0 && syscall(SYS_setresuid, 65534, 65534, 65534) != 0) {
      skip = std::string("cannot drop root in a thread: ") + std::strerror(errno);
      return;
    }
    if (DIR* d = opendir(dir.file("locked").c_str())) {
      closedir(d);
      skip = "permission bits do not stop reads here";
      return;
    }
    status = Dataset::list_files(pattern).status();
  }).join();
  // A change of effective uid made the process undumpable; undo that.
  prctl(PR_SET_DUMPABLE, 1);
  std::filesystem::permissions(dir.file("locked"), std::filesystem::perms(0755));
  if (!skip.empty()) GTEST_SKIP() << skip;
  SLUICE_EXPECT_ERROR(status, StatusCode::kFailedPrecondition,
                      "list_files: expanding '" + pattern + "': cannot read the folder '" +
                          dir.file("locked") + "': " + std::strerror(EACCES));
}

// ---- TFRecordDataset ------------------------------------------------------

TEST(TFRecordDatasetTest, IndexedAndSequentialConformance) {
  ScratchDir dir;
  const std::vector<int> counts = {5, 0, 7, 3};
  const auto indexed = WriteFiles(dir, "i", counts, true);
  const auto plain = WriteFiles(dir, "p", counts, false);
  const auto want = Sequential(counts);

  Dataset a = TFRecordDataset(indexed);
  SLUICE_ASSERT_OK(a.status());
  EXPECT_EQ(a.cardinality(), 15);
  EXPECT_NE(a.DebugString().find("indexed"), std::string::npos) << a.DebugString();
  Dataset b = TFRecordDataset(plain);
  EXPECT_EQ(b.cardinality(), kUnknownCardinality);
  EXPECT_EQ(TFRecordDataset(indexed, {.use_index = false}).cardinality(), kUnknownCardinality);
  RunConformance(
      {.name = "indexed", .make = [&](int) { return TFRecordDataset(indexed); }, .expected = want});
  RunConformance({.name = "sequential",
                  .make = [&](int) { return TFRecordDataset(plain); },
                  .expected = want});
  // Sequential reading of indexed files restores with Seek.
  RunConformance({.name = "sequential with index",
                  .make =
                      [&](int) {
                        return TFRecordDataset(indexed)
                            .map([](Element e) { return e; }, {.parallelism = 2})
                            .take(100);
                      },
                  .expected = want});
}

TEST(TFRecordDatasetTest, ParallelReadsRoundRobinSameWithAndWithoutIndex) {
  ScratchDir dir;
  const std::vector<int> counts = {3, 1, 0, 4, 2, 5};
  const auto indexed = WriteFiles(dir, "i", counts, true);
  const auto plain = WriteFiles(dir, "p", counts, false);
  for (int64_t n : {1, 2, 3, 4, 6, 9}) {
    SCOPED_TRACE("num_parallel_reads " + std::to_string(n));
    auto x = ReadAll(TFRecordDataset(indexed, {.num_parallel_reads = n}));
    auto y = ReadAll(TFRecordDataset(plain, {.num_parallel_reads = n}));
    EXPECT_EQ(x, y);
    EXPECT_EQ(x.size(), 15u);
    RunConformance({.name = "parallel reads plain",
                    .make = [&](int) { return TFRecordDataset(plain, {.num_parallel_reads = n}); },
                    .expected = y});
    RunConformance(
        {.name = "parallel reads indexed",
         .make = [&](int) { return TFRecordDataset(indexed, {.num_parallel_reads = n}); },
         .expected = y});
  }
  // Runs of one record (buffer_size 1): every record after a file's first
  // is read ahead in a task; the order and contents are the same.
  for (int64_t n : {2, 3, 6}) {
    SCOPED_TRACE("read ahead, num_parallel_reads " + std::to_string(n));
    const auto y = ReadAll(TFRecordDataset(plain, {.num_parallel_reads = n}));
    RunConformance({.name = "parallel reads indexed, read ahead",
                    .make =
                        [&](int) {
                          return TFRecordDataset(indexed,
                                                 {.buffer_size = 1, .num_parallel_reads = n});
                        },
                    .expected = y});
    // Files without an index: blocks of one record (buffer_size 1), each
    // next one read ahead in a task.
    RunConformance({.name = "parallel reads plain, read ahead",
                    .make =
                        [&](int) {
                          return TFRecordDataset(plain,
                                                 {.buffer_size = 1, .num_parallel_reads = n});
                        },
                    .expected = y});
    // Under a parallel map, which pulls its input from several threads.
    RunConformance({.name = "read ahead under a parallel map",
                    .make =
                        [&](int) {
                          return TFRecordDataset(indexed,
                                                 {.buffer_size = 1, .num_parallel_reads = n})
                              .map([](Element e) { return e; }, {.parallelism = 3});
                        },
                    .expected = y});
    RunConformance({.name = "plain read ahead under a parallel map",
                    .make =
                        [&](int) {
                          return TFRecordDataset(plain, {.buffer_size = 1, .num_parallel_reads = n})
                              .map([](Element e) { return e; }, {.parallelism = 3});
                        },
                    .expected = y});
  }
  // Every read is counted once, ahead or in place: one per record with
  // one-record runs (indexed); one per record and one for each file's end
  // with one-record blocks (plain).
  for (const auto* files : {&indexed, &plain}) {
    SLUICE_ASSERT_OK_AND_ASSIGN(
        Iterator it,
        TFRecordDataset(*files, {.buffer_size = 1, .num_parallel_reads = 3}).iterator());
    int64_t n = 0;
    for (;;) {
      SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, it.next());
      if (!e) break;
      ++n;
    }
    EXPECT_EQ(n, 15);
    const IteratorStats stats = it.stats();
    const StageStats& st = stats.stages.at(0);
    ASSERT_EQ(st.kind, "TFRecordDataset");
    EXPECT_EQ(st.reads_ahead + st.reads_in_place, files == &indexed ? 15 : 15 + 6)
        << st.reads_ahead << " ahead, " << st.reads_in_place << " in place";
  }
  // Slots: f0 f1 | f1 ends -> f2 (empty) -> f3 takes its place.
  EXPECT_EQ(ReadAll(TFRecordDataset(plain, {.num_parallel_reads = 2})),
            StringElements({"f0r0", "f1r0", "f0r1", "f3r0", "f0r2", "f3r1", "f4r0", "f3r2", "f4r1",
                            "f3r3", "f5r0", "f5r1", "f5r2", "f5r3", "f5r4"}));
  // kAutotune: kAutotuneCycleLength on every machine, capped at the file
  // count (6 here: every file at once).
  static_assert(kAutotuneCycleLength >= 6);
  EXPECT_EQ(ReadAll(TFRecordDataset(plain, {.num_parallel_reads = kAutotune})),
            ReadAll(TFRecordDataset(plain, {.num_parallel_reads = 6})));
}

TEST(TFRecordDatasetTest, GzipViewsAndOrigin) {
  ScratchDir dir;
  const auto gz = WriteFiles(dir, "g", {4, 2}, true, Compression::kGzip);
  // Compressed files are read (and inflated) ahead with parallel reads.
  const auto gz3 = WriteFiles(dir, "h", {4, 0, 7, 2}, true, Compression::kGzip);
  for (int64_t buffer : {int64_t{1}, int64_t{40}}) {
    RunConformance({.name = "gzip read ahead",
                    .make =
                        [&](int) {
                          return TFRecordDataset(gz3,
                                                 {.buffer_size = buffer, .num_parallel_reads = 2});
                        },
                    .expected = ReadAll(TFRecordDataset(gz3, {.num_parallel_reads = 2}))});
  }
  Dataset ds = TFRecordDataset(gz);
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  RunConformance({.name = "gzip",
                  .make = [&](int) { return TFRecordDataset(gz); },
                  .expected = Sequential({4, 2})});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(auto e, it.next());
  SLUICE_ASSERT_OK_AND_ASSIGN(e, it.next());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->OriginString(), gz[0] + " record 1");
  EXPECT_EQ((*e)[0].dtype(), DType::kString);
  EXPECT_FALSE((*e)[0].string_owners().empty());  // a view, not a copy
  SLUICE_EXPECT_ERROR(TFRecordDataset({}).status(), StatusCode::kInvalidArgument, "no files");
}

void CorruptByte(const std::string& path, size_t offset) {
  std::string bytes = ReadFileOrDie(path);
  bytes[offset] ^= 0x55;
  WriteFileOrDie(path, bytes);
}

TEST(TFRecordDatasetTest, CorruptRecordNamesFileAndOffset) {
  ScratchDir dir;
  for (bool index : {false, true}) {
    SCOPED_TRACE(index ? "indexed" : "sequential");
    const auto files = WriteFiles(dir, index ? "i" : "p", {4}, index);
    // Record 2's payload: each record is 12 + 4 bytes of payload + 4.
    CorruptByte(files[0], 2 * 20 + 12 + 1);
    RunConformance({.name = "corrupt",
                    .make = [&](int) { return TFRecordDataset(files).take(2); },
                    .expected = StringElements({"f0r0", "f0r1"}),
                    .make_failing = [&] { return TFRecordDataset(files); },
                    .error_substring = files[0]});
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, TFRecordDataset(files).iterator());
    Status err;
    for (int i = 0; i < 4 && err.ok(); ++i) err = it.next().status();
    EXPECT_EQ(err.code(), StatusCode::kDataLoss) << err.ToString();
    EXPECT_NE(err.message().find("offset"), std::string_view::npos) << err.ToString();
    EXPECT_NE(err.message().find("40"), std::string_view::npos) << err.ToString();
  }
}

// batch() over a TFRecordDataset takes records straight into one string
// tensor (stacked reads): the same batches, origins, states and errors as
// stacking the elements one by one (a map in between forces that path).
TEST(TFRecordDatasetTest, StackedBatchesEqualElementByElementBatches) {
  ScratchDir dir;
  const std::vector<int> counts = {5, 0, 7, 3, 11};
  const auto indexed = WriteFiles(dir, "i", counts, true);
  const auto plain = WriteFiles(dir, "p", counts, false);
  auto same = [](Element e) { return e; };
  for (const auto* files : {&indexed, &plain}) {
    for (int64_t reads : {1, 2, 3}) {
      for (bool drop : {false, true}) {
        SCOPED_TRACE((files == &indexed ? "indexed" : "plain") + std::string(", reads ") +
                     std::to_string(reads) + (drop ? ", drop" : ""));
        auto make = [&](bool stacked) {
          Dataset r = TFRecordDataset(*files, {.num_parallel_reads = reads});
          if (!stacked) r = r.map(same);
          return r.repeat(3).batch(4, {.drop_remainder = drop});
        };
        const auto want = ReadAll(make(false));
        EXPECT_EQ(want.size(), drop ? 19u : 20u);  // 78 records
        RunConformance(
            {.name = "stacked batch", .make = [&](int) { return make(true); }, .expected = want});
        // Batches larger than a file, and than the whole epoch.
        for (int64_t bs : {9, 40}) {
          auto big = [&](bool stacked) {
            Dataset r = TFRecordDataset(*files, {.num_parallel_reads = reads});
            if (!stacked) r = r.map(same);
            return r.repeat(2).batch(bs, {.drop_remainder = drop});
          };
          EXPECT_EQ(ReadAll(big(true)), ReadAll(big(false))) << "batch " << bs;
        }
      }
    }
  }
  // The batch's origin is its first record, as when stacking elements.
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, TFRecordDataset(indexed).skip(0).batch(4).iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it2, TFRecordDataset(indexed).batch(4).iterator());
  SLUICE_ASSERT_OK(it.next().status());
  SLUICE_ASSERT_OK_AND_ASSIGN(auto b, it2.next());
  SLUICE_ASSERT_OK_AND_ASSIGN(b, it2.next());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->OriginString(), indexed[0] + " record 4");
  EXPECT_EQ((*b)[0].shape(), Shape({4}));
  EXPECT_FALSE((*b)[0].string_owners().empty());  // views, not copies
}

TEST(TFRecordDatasetTest, StackedBatchStopsAtACorruptRecordAndNamesIt) {
  ScratchDir dir;
  for (bool index : {false, true}) {
    SCOPED_TRACE(index ? "indexed" : "sequential");
    const auto files = WriteFiles(dir, index ? "i" : "p", {6}, index);
    CorruptByte(files[0], 3 * 20 + 12 + 1);  // record 3
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, TFRecordDataset(files).batch(2).iterator());
    SLUICE_ASSERT_OK_AND_ASSIGN(auto b, it.next());
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->DebugString(1000),
              Element({Tensor::FromStrings({"f0r0", "f0r1"}).value()}).DebugString(1000));
    Status err = it.next().status();  // records 2 and 3: 3 is corrupt
    EXPECT_EQ(err.code(), StatusCode::kDataLoss) << err.ToString();
    EXPECT_NE(err.message().find(files[0]), std::string_view::npos) << err.ToString();
    EXPECT_NE(err.message().find("60"), std::string_view::npos) << err.ToString();
  }
}

// ---- global_shuffle -------------------------------------------------------

TEST(GlobalShuffleTest, IndexedTFRecordsPermutationPerEpoch) {
  ScratchDir dir;
  const std::vector<int> counts = {40, 25, 35};
  const auto files = WriteFiles(dir, "i", counts, true);
  const auto all = Sequential(counts);
  const std::set<std::string> want(all.begin(), all.end());

  auto two_epochs = TFRecordDataset(files).global_shuffle({.seed = 5}).repeat(2);
  const auto got = ReadAll(two_epochs);
  ASSERT_EQ(got.size(), 200u);
  const std::vector<std::string> e1(got.begin(), got.begin() + 100),
      e2(got.begin() + 100, got.end());
  EXPECT_EQ(std::set<std::string>(e1.begin(), e1.end()), want);
  EXPECT_EQ(std::set<std::string>(e2.begin(), e2.end()), want);
  EXPECT_NE(e1, e2) << "reshuffle_each_iteration gave the same order twice";
  EXPECT_NE(e1, all) << "not shuffled";
  // Same seed: same order; another seed: another.
  EXPECT_EQ(ReadAll(TFRecordDataset(files).global_shuffle({.seed = 5}).repeat(2)), got);
  EXPECT_NE(ReadAll(TFRecordDataset(files).global_shuffle({.seed = 6}).repeat(2)), got);
  // Without reshuffle both epochs agree.
  const auto fixed = ReadAll(TFRecordDataset(files)
                                 .global_shuffle({.seed = 5, .reshuffle_each_iteration = false})
                                 .repeat(2));
  EXPECT_EQ(std::vector<std::string>(fixed.begin(), fixed.begin() + 100),
            std::vector<std::string>(fixed.begin() + 100, fixed.end()));

  RunConformance({.name = "global_shuffle", .make = [&](int) {
                    return TFRecordDataset(files).global_shuffle(
                        {.seed = 9, .reshuffle_each_iteration = false});
                  }});
  RunConformance({.name = "global_shuffle pipeline seed", .make = [&](int p) {
                    return Dataset::range(300)
                        .map([](Element e) { return e; })
                        .global_shuffle({.reshuffle_each_iteration = false})
                        .map([](Element e) { return e; }, {.parallelism = p});
                  }});

  // The state is a cursor and a seed.
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it,
                              TFRecordDataset(files).global_shuffle({.seed = 5}).iterator());
  for (int i = 0; i < 37; ++i) SLUICE_ASSERT_OK(it.next().status());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, it.save());
  std::printf("global_shuffle saved state: %zu bytes\n", state.size());
  EXPECT_LT(state.size(), 200u);
  // Restoring into an iterator of another iteration keeps the saved order.
  Dataset reshuffled = TFRecordDataset(files).global_shuffle({.seed = 5});
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator other, reshuffled.iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator other2, reshuffled.iterator());
  SLUICE_ASSERT_OK(other2.restore(state));
  for (int i = 0; i < 63; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(auto x, it.next());
    SLUICE_ASSERT_OK_AND_ASSIGN(auto y, other2.next());
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->DebugString(), y->DebugString());
  }
}

TEST(GlobalShuffleTest, NeedsRandomAccess) {
  SLUICE_EXPECT_ERROR(Dataset::from_generator(CountTo(3)).global_shuffle().status(),
                      StatusCode::kFailedPrecondition, "'from_generator'");
  ScratchDir dir;
  const auto plain = WriteFiles(dir, "p", {3}, false);
  SLUICE_EXPECT_ERROR(TFRecordDataset(plain).global_shuffle().status(),
                      StatusCode::kFailedPrecondition, "TFRecordDataset");
  SLUICE_EXPECT_ERROR(Dataset::range(5).repeat().global_shuffle().status(),
                      StatusCode::kFailedPrecondition, "'repeat' does not allow random access");
}

// ---- shard ----------------------------------------------------------------

TEST(ShardTest, ConformanceAndCardinality) {
  RunConformance({.name = "shard random access",
                  .make = [](int) { return Dataset::range(10).shard(3, 1); },
                  .expected = Int64Elements({1, 4, 7})});
  RunConformance({.name = "shard sequential",
                  .make = [](int) { return Dataset::from_generator(CountTo(11)).shard(4, 2); },
                  .expected = Int64Elements({2, 6, 10})});
  RunConformance({.name = "shard positional",
                  .make =
                      [](int p) {
                        return Dataset::range(23)
                            .map([](Element e) { return e; }, {.parallelism = p})
                            .prefetch(2)
                            .shard(5, 4);
                      },
                  .expected = Int64Elements({4, 9, 14, 19})});
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(Dataset::range(10).shard(3, i).cardinality(), i == 0 ? 4 : 3);
  EXPECT_EQ(Dataset::range(10).repeat().shard(3, 0).cardinality(), kInfiniteCardinality);
  SLUICE_EXPECT_ERROR(Dataset::range(3).shard(0, 0).status(), StatusCode::kInvalidArgument,
                      "num_shards");
  SLUICE_EXPECT_ERROR(Dataset::range(3).shard(2, 2).status(), StatusCode::kInvalidArgument,
                      "index");
}

// (value, weight) elements of shard(..., {.pad = true}).
std::vector<std::string> Weighted(const std::vector<std::pair<int64_t, float>>& values) {
  std::vector<std::string> out;
  for (const auto& [v, w] : values) {
    out.push_back(Element({Tensor::Scalar<int64_t>(v), Tensor::Scalar<float>(w)},
                          std::vector<std::string>{"", "sample_weight"})
                      .DebugString(1000));
  }
  return out;
}

TEST(ShardTest, EqualSharesConformance) {
  // Rounds of 4: {0..3}, {4..7}, then 8, 9, 10 (incomplete: dropped).
  RunConformance({.name = "shard equal random access",
                  .make = [](int) { return Dataset::range(11).shard(4, 3, {.equal = true}); },
                  .expected = Int64Elements({3, 7})});
  RunConformance(
      {.name = "shard equal sequential",
       .make =
           [](int) { return Dataset::from_generator(CountTo(11)).shard(4, 2, {.equal = true}); },
       .expected = Int64Elements({2, 6})});
  RunConformance({.name = "shard equal positional",
                  .make =
                      [](int p) {
                        return Dataset::range(11)
                            .map([](Element e) { return e; }, {.parallelism = p})
                            .prefetch(2)
                            .shard(4, 0, {.equal = true});
                      },
                  .expected = Int64Elements({0, 4})});
  // Padding: the last round's missing elements are copies of its first.
  RunConformance({.name = "shard pad random access",
                  .make = [](int) { return Dataset::range(10).shard(4, 3, {.pad = true}); },
                  .expected = Weighted({{3, 1}, {7, 1}, {8, 0}})});
  RunConformance(
      {.name = "shard pad sequential",
       .make = [](int) { return Dataset::from_generator(CountTo(10)).shard(4, 1, {.pad = true}); },
       .expected = Weighted({{1, 1}, {5, 1}, {9, 1}})});
  RunConformance(
      {.name = "shard pad sequential copy",
       .make = [](int) { return Dataset::from_generator(CountTo(10)).shard(4, 2, {.pad = true}); },
       .expected = Weighted({{2, 1}, {6, 1}, {8, 0}})});
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(Dataset::range(11).shard(4, i, {.equal = true}).cardinality(), 2);
    EXPECT_EQ(Dataset::range(11).shard(4, i, {.pad = true}).cardinality(), 3);
  }
  EXPECT_EQ(Dataset::range(11).shard(4, 0, {.pad = true}).element_spec().size(), 2u);
  // A weight component the input has already: at once if its spec says so,
  // else at the first element.
  auto with_weight = Dataset::range(3).map([](Element e) {
    e.push_back(Tensor::Scalar<float>(1), "sample_weight");
    return e;
  });
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, with_weight.shard(2, 0, {.pad = true}).iterator());
  SLUICE_EXPECT_ERROR(it.next().status(), StatusCode::kInvalidArgument,
                      "already has a component named 'sample_weight'");
  SLUICE_EXPECT_ERROR(
      Dataset::range(3).shard(2, 0, {.pad = true}).shard(2, 0, {.pad = true}).status(),
      StatusCode::kInvalidArgument, "already has a component named");
}

TEST(ShardTest, KeysElementsByTheirPositionForMaps) {
  // A random map after shard draws what one unsharded pipeline would.
  auto draw = [](Element e, const MapContext& c) -> Result<Element> {
    Rng rng = c.rng();
    e.push_back(Tensor::Scalar<int64_t>(static_cast<int64_t>(rng.NextU64() % 1000000)), "draw");
    return e;
  };
  const std::vector<std::string> all =
      ReadAll(Dataset::range(12).map(draw, {.parallelism = 2}).with_options({.seed = 5}));
  for (int64_t n : {2, 3}) {
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<std::string> mine = ReadAll(
          Dataset::range(12).shard(n, i).map(draw, {.parallelism = 2}).with_options({.seed = 5}));
      for (size_t k = 0; k < mine.size(); ++k) {
        EXPECT_EQ(mine[k], all[static_cast<size_t>(k * n + i)]) << n << " shards, shard " << i;
      }
    }
  }
}

TEST(ShardTest, RestoresOnAnotherShardCount) {
  // 3 shards read 2 elements each (positions 0..5 of the input), save; 2
  // shards restored from shard 0's state read the rest: 6, 8, ... and 7, 9...
  auto make = [](int64_t n, int64_t i) {
    return Dataset::range(20)
        .shard(n, i, {.equal = true})
        .map([](Element e) { return e; }, {.parallelism = 2});
  };
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, make(3, 0).iterator());
  for (int k = 0; k < 2; ++k) SLUICE_ASSERT_OK(it.next().status());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string state, it.save());
  std::vector<std::string> rest[2];
  for (int64_t i = 0; i < 2; ++i) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator r, make(2, i).iterator());
    SLUICE_ASSERT_OK(r.restore(state));
    for (;;) {
      SLUICE_ASSERT_OK_AND_ASSIGN(auto e, r.next());
      if (!e) break;
      rest[i].push_back(e->DebugString(1000));
    }
  }
  EXPECT_EQ(rest[0], Int64Elements({6, 8, 10, 12, 14, 16, 18}));
  EXPECT_EQ(rest[1], Int64Elements({7, 9, 11, 13, 15, 17, 19}));
  // Read in order, a state saved mid-round cannot move to another count.
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator seq,
                              Dataset::from_generator(CountTo(20)).shard(3, 0).iterator());
  SLUICE_ASSERT_OK(seq.next().status());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string mid, seq.save());
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator other,
                              Dataset::from_generator(CountTo(20)).shard(2, 0).iterator());
  SLUICE_EXPECT_ERROR(other.restore(mid), StatusCode::kInvalidArgument, "middle of a round");
}

TEST(ShardTest, IndexedFilesReadOnlyTheirRecords) {
  ScratchDir dir;
  const auto files = WriteFiles(dir, "i", {6}, true);
  // Break record 1 (shard 1 of 2); shard 0 never reads it.
  CorruptByte(files[0], 1 * 20 + 12 + 1);
  EXPECT_EQ(ReadAll(TFRecordDataset(files).shard(2, 0)), StringElements({"f0r0", "f0r2", "f0r4"}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, TFRecordDataset(files).shard(2, 1).iterator());
  EXPECT_EQ(it.next().status().code(), StatusCode::kDataLoss);
}

// ---- cache ------------------------------------------------------------------

TEST(CacheTest, MemorySecondIteratorReadsCache) {
  std::atomic<int> calls{0};
  Dataset ds = Counting(Dataset::range(10), &calls).cache();
  EXPECT_EQ(ReadAll(ds), Int64Elements({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(calls.load(), 10);
  EXPECT_EQ(ReadAll(ds), Int64Elements({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(calls.load(), 10);

  // repeat: epoch 2 reads the cache.
  calls = 0;
  Dataset rep = Counting(Dataset::range(5), &calls).cache().repeat(3);
  EXPECT_EQ(ReadAll(rep).size(), 15u);
  EXPECT_EQ(calls.load(), 5);

  // A partial first pass does not populate the cache.
  calls = 0;
  Dataset part = Counting(Dataset::range(6), &calls).cache();
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, part.iterator());
    for (int i = 0; i < 3; ++i) SLUICE_ASSERT_OK(it.next().status());
  }
  EXPECT_EQ(ReadAll(part).size(), 6u);
  EXPECT_EQ(calls.load(), 9);
  EXPECT_EQ(ReadAll(part).size(), 6u);
  EXPECT_EQ(calls.load(), 9);

  RunConformance({.name = "cache memory", .make = [](int p) {
                    return Dataset::range(20)
                        .map([](Element e) { return e; }, {.parallelism = p})
                        .cache()
                        .repeat(2);
                  }});
}

TEST(CacheTest, FileWrittenThenRead) {
  ScratchDir dir;
  const std::string file = dir.file("cache.bin");
  std::atomic<int> calls{0};
  auto make = [&] { return Counting(Dataset::range(12), &calls).cache(file); };
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, make().iterator());
    SLUICE_ASSERT_OK(it.next().status());
    SLUICE_EXPECT_ERROR(it.save().status(), StatusCode::kFailedPrecondition,
                        "cannot save while the cache is being written");
  }
  EXPECT_FALSE(std::filesystem::exists(file)) << "a partial pass published the file";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            0)
      << "temporary files left behind";
  const auto want = ReadAll(make());
  EXPECT_EQ(want.size(), 12u);
  EXPECT_TRUE(std::filesystem::exists(file));
  calls = 0;
  EXPECT_EQ(ReadAll(make()), want);  // a new Dataset: reads the file
  EXPECT_EQ(calls.load(), 0);
  RunConformance({.name = "cache file", .make = [&](int) { return make(); }, .expected = want});
  EXPECT_EQ(calls.load(), 0);

  // Corrupt: DataLoss naming the file and the offset.
  std::string bytes = ReadFileOrDie(file);
  bytes[bytes.size() / 2] ^= 0x40;
  WriteFileOrDie(file, bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, make().iterator());
  Status err;
  for (int i = 0; i < 13 && err.ok(); ++i) err = it.next().status();
  EXPECT_EQ(err.code(), StatusCode::kDataLoss) << err.ToString();
  EXPECT_NE(err.message().find(file), std::string_view::npos) << err.ToString();
  EXPECT_NE(err.message().find("offset"), std::string_view::npos) << err.ToString();
}

// The file is written under a hidden name: a glob on the cache's own name
// ("train-*", as a reader of the folder would use) sees nothing until the
// pass completes, and then the file and its index alone. The temporary
// files of a pass that was killed go with the next pass.
TEST(CacheTest, FileIsWrittenUnderAHiddenName) {
  ScratchDir dir;
  const std::string file = dir.file("train-cache");
  WriteFileOrDie(dir.file(".train-cache.tmp-0badf00d"), "left by a killed pass");
  WriteFileOrDie(dir.file(".train-cache.idx.tmp-0badf00d"), "left by a killed pass");
  auto matches = [&] {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = e.path().filename().string();
      if (name.starts_with("train-")) names.insert(name);
    }
    return names;
  };
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, Dataset::range(12).cache(file).iterator());
  for (int i = 0; i < 5; ++i) SLUICE_ASSERT_OK(it.next().status());
  EXPECT_EQ(matches(), std::set<std::string>()) << "a temporary file is visible to train-*";
  EXPECT_FALSE(std::filesystem::is_empty(dir.path())) << "nothing is being written";
  for (;;) {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, it.next());
    if (!e) break;
  }
  EXPECT_EQ(matches(), (std::set<std::string>{"train-cache", "train-cache.idx"}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            2)
      << "temporary files left behind";
}

// Errors from the OS carry its code and name the file; they are not
// Internal (a bug of sluice's).
TEST(CacheTest, FileErrorsCarryTheOsCode) {
  ScratchDir dir;
  const std::string missing = dir.file("no-such-folder/cache");
  SLUICE_EXPECT_ERROR(Dataset::range(3).cache(missing).iterator().status(), StatusCode::kNotFound,
                      missing);

  // Something else took the cache's name during the pass (here a folder):
  // publishing fails, and the temporary files go.
  const std::string file = dir.file("cache");
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, Dataset::range(3).cache(file).iterator());
    SLUICE_ASSERT_OK(it.next().status());
    std::filesystem::create_directories(file + "/taken");
    Status err;
    for (int i = 0; i < 4 && err.ok(); ++i) err = it.next().status();
    EXPECT_EQ(err.code(), StatusCode::kFailedPrecondition) << err;
    EXPECT_NE(err.message().find(file), std::string_view::npos) << err;
  }
  std::filesystem::remove_all(file);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "temporary files left behind";

  // A folder it may not write (not checkable as root, who may write anywhere).
  if (::geteuid() != 0) {
    const std::string locked = dir.file("locked");
    std::filesystem::create_directory(locked);
    std::filesystem::permissions(
        locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    SLUICE_EXPECT_ERROR(Dataset::range(3).cache(locked + "/cache").iterator().status(),
                        StatusCode::kFailedPrecondition, locked + "/cache");
    std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  }
}

TEST(CacheTest, FileFromAnotherInputIsRefused) {
  ScratchDir dir;
  const std::string file = dir.file("cache.bin");
  EXPECT_EQ(ReadAll(Dataset::range(5).cache(file)).size(), 5u);
  // The same input again reads the file; a changed input is refused rather
  // than fed stale elements.
  EXPECT_EQ(ReadAll(Dataset::range(5).cache(file)).size(), 5u);
  SLUICE_EXPECT_ERROR(Dataset::range(7).cache(file).iterator().status(),
                      StatusCode::kFailedPrecondition, "was made from a different input");
  // Not a cache file at all.
  WriteFileOrDie(dir.file("other.bin"), "");
  SLUICE_EXPECT_ERROR(Dataset::range(5).cache(dir.file("other.bin")).iterator().status(),
                      StatusCode::kDataLoss, "not a sluice cache file");
}

}  // namespace
}  // namespace sluice
