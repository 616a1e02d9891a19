// WebDatasetDataset on the file source: the shared conformance suite (in
// order and with num_parallel_reads, with and without the index), elements
// as named views, missing members, ignore_errors skipping exactly a bad
// sample, random access with the index, and brace patterns in list_files.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conformance.h"
#include "ignore_errors_util.h"
#include "sluice/pipeline/webdataset.h"
#include "sluice/records/tar_index.h"
#include "sluice/records/tar_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::ReadIgnoringErrors;
using testing::ScratchDir;

constexpr int kFiles = 3;
constexpr int kSamples = 9;  // per file

std::string Key(int f, int s) { return "f" + std::to_string(f) + "/s" + std::to_string(s); }

// kFiles shards of kSamples samples (jpg, cls). `bad` (file, sample) is a
// member without a key written in place of that sample.
std::vector<std::string> WriteShards(const ScratchDir& dir, bool index,
                                     std::pair<int, int> bad = {-1, -1},
                                     std::pair<int, int> no_cls = {-1, -1}) {
  std::vector<std::string> paths;
  for (int f = 0; f < kFiles; ++f) {
    const std::string path = dir.file("shard-00000" + std::to_string(f) + ".tar");
    auto w = TarWriter::Create(path);
    EXPECT_TRUE(w.ok()) << w.status();
    for (int s = 0; s < kSamples; ++s) {
      if (std::make_pair(f, s) == bad) {
        EXPECT_TRUE((*w)->Add(".jpg", "no key").ok());
        continue;
      }
      EXPECT_TRUE((*w)->Add(Key(f, s) + ".jpg", std::string(100 * s + 1, char('a' + s))).ok());
      if (std::make_pair(f, s) != no_cls) {
        EXPECT_TRUE((*w)->Add(Key(f, s) + ".CLS", std::to_string(s)).ok());
      }
    }
    EXPECT_TRUE((*w)->Close().ok());
    if (index) {
      EXPECT_TRUE(BuildAndSaveTarIndex(path).ok());
    }
    paths.push_back(path);
  }
  return paths;
}

TEST(WebDatasetDataset, Conformance) {
  ScratchDir plain_dir, indexed_dir;
  const std::vector<std::string> plain = WriteShards(plain_dir, false);
  const std::vector<std::string> indexed = WriteShards(indexed_dir, true);
  for (int64_t n : {1, 2, 3}) {
    SCOPED_TRACE("num_parallel_reads " + std::to_string(n));
    const WebDatasetOptions o{.extensions = {"cls", "jpg"}, .buffer_size = 4096,
                              .num_parallel_reads = n};
    // The same elements in the same order with and without the index.
    const std::vector<std::string> want = ReadAll(WebDatasetDataset(plain, o));
    ASSERT_EQ(want.size(), static_cast<size_t>(kFiles * kSamples));
    std::vector<std::string> renamed = ReadAll(WebDatasetDataset(indexed, o));
    EXPECT_EQ(renamed, want);
    for (bool index : {false, true}) {
      const std::vector<std::string>& files = index ? indexed : plain;
      testing::ConformanceCase c;
      c.name = index ? "webdataset indexed" : "webdataset";
      c.make = [files, o](int) { return WebDatasetDataset(files, o); };
      c.expected = want;
      c.make_failing = [files] {
        return WebDatasetDataset(files, {.extensions = {"cls", "png"}});
      };
      c.error_substring = "has no \"png\" member";
      testing::RunConformance(c);
      EXPECT_EQ(WebDatasetDataset(files, o).cardinality(),
                index ? kFiles * kSamples : kUnknownCardinality);
    }
  }
}

TEST(WebDatasetDataset, ElementsAreNamedViews) {
  ScratchDir dir;
  const std::vector<std::string> files = WriteShards(dir, false);
  auto it = WebDatasetDataset(files).iterator();  // extensions of the first sample: jpg, cls
  ASSERT_TRUE(it.ok()) << it.status();
  for (int s = 0; s < kSamples; ++s) {
    auto e = it->next();
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->has_value());
    const Element& el = **e;
    ASSERT_EQ(el.names(), (std::vector<std::string>{"__key__", "jpg", "cls"}));
    EXPECT_EQ(el[0].scalar<std::string_view>(), Key(0, s));
    EXPECT_EQ(el[1].scalar<std::string_view>(), std::string(100 * s + 1, char('a' + s)));
    EXPECT_EQ(el[2].scalar<std::string_view>(), std::to_string(s));
    // One read buffer holds the sample: the payloads are views into it.
    EXPECT_EQ(el[1].string_owners().size(), 1u);
    EXPECT_EQ(el[1].string_owners()[0].data(), el[2].string_owners()[0].data());
  }
}

TEST(WebDatasetDataset, MissingMemberIsAnErrorOrEmpty) {
  ScratchDir dir;
  const std::vector<std::string> files = WriteShards(dir, false, {-1, -1}, {1, 4});
  auto it = WebDatasetDataset(files, {.extensions = {"jpg", "cls"}}).iterator();
  ASSERT_TRUE(it.ok());
  Status error;
  for (int i = 0; i < kFiles * kSamples && error.ok(); ++i) {
    auto e = it->next();
    if (!e.ok()) error = e.status();
  }
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument) << error;
  EXPECT_NE(error.message().find("shard-000001.tar"), std::string::npos) << error;
  EXPECT_NE(error.message().find("\"f1/s4\""), std::string::npos) << error;
  const std::vector<std::string> all = ReadAll(
      WebDatasetDataset(files, {.extensions = {"jpg", "cls"},
                                .missing = WebDatasetOptions::Missing::kEmpty}));
  EXPECT_EQ(all.size(), static_cast<size_t>(kFiles * kSamples));
}

TEST(WebDatasetDataset, IgnoreErrorsSkipsExactlyTheBadSample) {
  for (bool index : {false, true}) {
    for (int64_t parallel : {1, 3}) {
      ScratchDir dir;
      const std::vector<std::string> files = WriteShards(dir, false, {1, 3});
      if (index) {
        // A shard with a bad sample cannot be indexed: the others are.
        EXPECT_FALSE(BuildAndSaveTarIndex(files[1]).ok());
        EXPECT_TRUE(BuildAndSaveTarIndex(files[0]).ok());
      }
      testing::IgnoredErrors got = ReadIgnoringErrors(
          WebDatasetDataset(files, {.extensions = {"jpg"}, .num_parallel_reads = parallel}));
      EXPECT_EQ(got.records.size(), static_cast<size_t>(kFiles * kSamples - 1));
      EXPECT_EQ(got.skipped, 1);
      EXPECT_EQ(std::count(got.records.begin(), got.records.end(), Key(1, 3)), 0);
      EXPECT_EQ(std::count(got.records.begin(), got.records.end(), Key(1, 4)), 1);
      ASSERT_EQ(got.errors.size(), 1u);
      EXPECT_NE(got.errors[0].find("has no key"), std::string::npos) << got.errors[0];
    }
  }
}

TEST(WebDatasetDataset, RandomAccessWithTheIndex) {
  ScratchDir dir;
  const std::vector<std::string> files = WriteShards(dir, true);
  const Dataset ds = WebDatasetDataset(files, {.extensions = {"cls"}});
  ASSERT_EQ(ds.cardinality(), kFiles * kSamples);
  const std::vector<std::string> in_order = ReadAll(ds);
  std::vector<std::string> shuffled = ReadAll(ds.global_shuffle({.seed = 5}));
  EXPECT_NE(shuffled, in_order);
  std::sort(shuffled.begin(), shuffled.end());
  std::vector<std::string> sorted = in_order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(shuffled, sorted);
}

TEST(WebDatasetDataset, BracePatternsInListFiles) {
  ScratchDir dir;
  WriteShards(dir, false);
  const Dataset files = Dataset::list_files({dir.file("shard-{000000..000001}.tar")});
  EXPECT_EQ(files.cardinality(), 2);
  const std::vector<std::string> all = ReadAll(
      files.interleave(webdataset({.extensions = {"cls"}}), {.cycle_length = 1}));
  EXPECT_EQ(all.size(), static_cast<size_t>(2 * kSamples));
  EXPECT_FALSE(Dataset::list_files({dir.file("shard-{0..")}).status().ok());
}

}  // namespace
}  // namespace sluice
