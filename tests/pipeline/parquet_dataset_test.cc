// ParquetDataset on the file source: the shared conformance suite over
// pyarrow's goldens (rows and batches, in order and indexed, 1 and 2 files
// open), RECORD and FILE sharding, ignore_errors over a corrupt row group.
#include "sluice/pipeline/parquet_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "conformance.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::RunConformance;
using testing::TestDataPath;

std::string Pq(const std::string& f) { return TestDataPath("parquet/" + f); }

#define SKIP_WITHOUT_PARQUET()                                       \
  if (!ParquetAvailable()) {                                         \
    EXPECT_EQ(ParquetDataset({Pq("types.parquet")}).status().code(), \
              StatusCode::kFailedPrecondition);                      \
    GTEST_SKIP() << "built without Apache Arrow C++";                \
  }

std::vector<int64_t> Ns(const Dataset& ds) {
  std::vector<int64_t> out;
  for (const Element& e : ds) {
    const Tensor& n = *e.find("n");
    for (int32_t v : n.flat<int32_t>()) out.push_back(v);
  }
  return out;
}

TEST(ParquetDatasetTest, ConformanceRowsAndBatchesInOrderAndIndexed) {
  SKIP_WITHOUT_PARQUET();
  const std::vector<std::string> files = {Pq("types.parquet"), Pq("types.parquet")};
  for (int64_t batch : {0, 3}) {
    for (int reads : {1, 2}) {
      const ParquetDatasetOptions o{
          .columns = {"i64", "s", "fsl", "st"}, .batch_rows = batch, .num_parallel_reads = reads};
      Dataset ds = ParquetDataset(files, o);
      ASSERT_TRUE(ds.status().ok()) << ds.status();
      EXPECT_TRUE(ds.random_access());
      EXPECT_EQ(ds.cardinality(), batch == 0 ? 20 : 10);
      const std::string name = "parquet_b" + std::to_string(batch) + "_r" + std::to_string(reads);
      RunConformance(
          {.name = name + "_indexed", .make = [&](int) { return ParquetDataset(files, o); }});
      // In order (no random access): the same elements.
      Result<std::shared_ptr<const FileFormat>> format = ParquetFormat(files[0], o);
      ASSERT_TRUE(format.ok()) << format.status();
      const std::vector<std::string> want = ReadAll(ds);
      RunConformance({.name = name + "_sequential",
                      .make =
                          [&](int) {
                            return FileSourceDataset(
                                files, *format, {.num_parallel_reads = reads, .use_index = false});
                          },
                      .expected = want});
    }
  }
}

TEST(ParquetDatasetTest, ShardsByRecordAndFileAndShuffles) {
  SKIP_WITHOUT_PARQUET();
  Dataset ds = ParquetDataset({Pq("dict_zstd.parquet")}, {.columns = {"n"}});
  EXPECT_EQ(ds.cardinality(), 1000);
  std::vector<int64_t> all = Ns(ds);
  ASSERT_EQ(all.size(), 1000u);
  std::vector<int64_t> shard = Ns(ds.shard(4, 1));
  ASSERT_EQ(shard.size(), 250u);
  for (size_t k = 0; k < shard.size(); ++k) EXPECT_EQ(shard[k], static_cast<int64_t>(4 * k + 1));
  std::vector<int64_t> shuffled = Ns(ds.global_shuffle({.seed = 7}));
  EXPECT_NE(shuffled, all);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, all);
  EXPECT_EQ(ds.source_files(), std::vector<std::string>{Pq("dict_zstd.parquet")});
  // Batches straight from the row groups (300, 300, 300, 100 rows).
  Dataset batches =
      ParquetDataset({Pq("dict_zstd.parquet")}, {.columns = {"n"}, .batch_rows = 256});
  EXPECT_EQ(batches.cardinality(), 7);  // 2 + 2 + 2 + 1
  EXPECT_EQ(Ns(batches), all);
  EXPECT_EQ(Ns(batches.unbatch().batch(256).rebatch(256)).size(), 1000u);
}

TEST(ParquetDatasetTest, IgnoreErrorsSkipsTheCorruptRowGroup) {
  SKIP_WITHOUT_PARQUET();
  for (int64_t batch : {0, 2}) {
    Dataset ds =
        ParquetDataset({Pq("corrupt_rg1.parquet")}, {.columns = {"x"}, .batch_rows = batch});
    auto it = ds.iterator();
    ASSERT_TRUE(it.ok());
    Result<std::optional<Element>> e = it->next();
    while (e.ok() && e->has_value()) e = it->next();
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().ToString().find("row group 1"), std::string::npos) << e.status();
    std::vector<int64_t> kept;
    for (const Element& x : ds.ignore_errors()) {
      for (int64_t v : x[0].flat<int64_t>()) kept.push_back(v);
    }
    EXPECT_EQ(kept, (std::vector<int64_t>{0, 1, 2, 3, 8, 9, 10, 11}));
  }
}

TEST(ParquetDatasetTest, FilesMustAgreeAndErrorsNameThem) {
  SKIP_WITHOUT_PARQUET();
  Dataset mixed = ParquetDataset({Pq("types.parquet"), Pq("nulls.parquet")});
  ASSERT_FALSE(mixed.status().ok());
  EXPECT_NE(mixed.status().ToString().find("nulls.parquet"), std::string::npos) << mixed.status();
  EXPECT_EQ(ParquetDataset({Pq("types.parquet")}, {.batch_rows = -1}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParquetDataset({Pq("no-such.parquet")}).status().code(), StatusCode::kNotFound);
  Dataset nulls = ParquetDataset({Pq("nulls.parquet")}, {.columns = {"x"}});
  Result<std::vector<std::string>> none = [&]() -> Result<std::vector<std::string>> {
    std::vector<std::string> out;
    SLUICE_ASSIGN_OR_RETURN(auto it, nulls.iterator());
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
      if (!e) return out;
    }
  }();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().ToString().find("column 'x', row 2"), std::string::npos) << none.status();
  EXPECT_EQ(ParquetDataset({Pq("nulls.parquet")}, {.columns = {"x"}}).ignore_errors().cardinality(),
            kUnknownCardinality);
}

}  // namespace
}  // namespace sluice
