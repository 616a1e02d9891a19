// File sources on an object store: TFRecordDataset, TextLineDataset and
// list_files reading s3:// from moto on loopback (tests/s3_server.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "s3_server.h"
#include "sluice/core/file.h"
#include "sluice/core/remote.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/text_datasets.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

using testing::S3Server;

std::vector<std::string> Strings(const Dataset& ds) {
  std::vector<std::string> out;
  auto it = ds.iterator();
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return out;
  for (;;) {
    auto e = it->next();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !e->has_value()) break;
    out.emplace_back((**e)[0].scalar<std::string_view>());
  }
  return out;
}

class RemoteSourcesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = testing::StartSuiteServer();
    if (server_ == nullptr || !server_->ok() || !server_->CreateBucket("data")) return;
    // Three TFRecord shards and two text files, written through sluice.
    for (int shard = 0; shard < 3; ++shard) {
      auto w =
          TFRecordWriter::Open("s3://data/train/train-" + std::to_string(shard) + "-of-3.tfrecord");
      if (!w.ok()) return;
      for (int i = 0; i < 1000; ++i) {
        if (!w->Write("shard " + std::to_string(shard) + " record " + std::to_string(i)).ok()) {
          return;
        }
      }
      if (!w->Close().ok()) return;
    }
    if (!WriteFileAtomically("s3://data/train/readme.txt", "not a shard").ok()) return;
    if (!WriteFileAtomically("s3://data/text/a.txt", "alpha\nbeta\n").ok()) return;
    if (!WriteFileAtomically("s3://data/text/b.txt", "gamma\n").ok()) return;
    ready_ = true;
  }
  static void TearDownTestSuite() { testing::StopSuiteServer(server_); }
  void SetUp() override {
    if (const std::string why = S3Server::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(ready_) << "moto_server did not start or the shards could not be written";
  }
  static S3Server* server_;
  static bool ready_;
};
S3Server* RemoteSourcesTest::server_ = nullptr;
bool RemoteSourcesTest::ready_ = false;

TEST_F(RemoteSourcesTest, ListFilesGlobsAPrefix) {
  EXPECT_EQ(Strings(Dataset::list_files("s3://data/train/train-*.tfrecord")),
            (std::vector<std::string>{"s3://data/train/train-0-of-3.tfrecord",
                                      "s3://data/train/train-1-of-3.tfrecord",
                                      "s3://data/train/train-2-of-3.tfrecord"}));
  // Braces expand first; '*' does not cross '/'.
  EXPECT_EQ(Strings(Dataset::list_files("s3://data/train/train-{0,2}-of-3.tfrecord")),
            (std::vector<std::string>{"s3://data/train/train-0-of-3.tfrecord",
                                      "s3://data/train/train-2-of-3.tfrecord"}));
  EXPECT_EQ(Strings(Dataset::list_files("s3://data/*/*.txt")),
            (std::vector<std::string>{"s3://data/text/a.txt", "s3://data/text/b.txt",
                                      "s3://data/train/readme.txt"}));
}

TEST_F(RemoteSourcesTest, ListFilesMatchingNothingIsNotFound) {
  Dataset ds = Dataset::list_files("s3://data/train/nothing-*.tfrecord");
  auto it = ds.iterator();
  Status s = it.ok() ? it->next().status() : it.status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  // A bucket that does not exist says so.
  auto typo = Dataset::list_files("s3://no-such-bucket-sluice/train-*.tfrecord").iterator();
  s = typo.ok() ? typo->next().status() : typo.status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("no such bucket"), std::string::npos) << s.ToString();
  // '*' does not cross '/': no object sits directly in the bucket.
  auto top = Dataset::list_files("s3://data/*.txt").iterator();
  s = top.ok() ? top->next().status() : top.status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
}

TEST_F(RemoteSourcesTest, TFRecordDatasetReadsShards) {
  std::vector<std::string> files = {"s3://data/train/train-0-of-3.tfrecord",
                                    "s3://data/train/train-1-of-3.tfrecord",
                                    "s3://data/train/train-2-of-3.tfrecord"};
  std::vector<std::string> got = Strings(TFRecordDataset(files));
  ASSERT_EQ(got.size(), 3000u);
  EXPECT_EQ(got[0], "shard 0 record 0");
  EXPECT_EQ(got[1999], "shard 1 record 999");
  EXPECT_EQ(got[2999], "shard 2 record 999");
  // Through list_files and interleave, as users write it.
  std::vector<std::string> mixed =
      Strings(Dataset::list_files("s3://data/train/train-*.tfrecord")
                  .interleave(tfrecords(), {.cycle_length = 3, .block_length = 1}));
  ASSERT_EQ(mixed.size(), 3000u);
  EXPECT_EQ(mixed[0], "shard 0 record 0");
  EXPECT_EQ(mixed[1], "shard 1 record 0");
  EXPECT_EQ(mixed[2], "shard 2 record 0");
}

TEST_F(RemoteSourcesTest, IteratorStatsCountTheObjectStoreRequests) {
  auto it = TFRecordDataset({"s3://data/train/train-0-of-3.tfrecord"}).iterator();
  ASSERT_TRUE(it.ok()) << it.status();
  while (true) {
    auto e = it->next();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
  }
  const IteratorStats stats = it->stats();
  EXPECT_GT(stats.remote.files_opened, 0);
  EXPECT_GT(stats.remote.requests, 0);
  EXPECT_GT(stats.remote.bytes_read, 0);
  EXPECT_NE(stats.ToJson().find("\"object_stores\": {"), std::string::npos) << stats.ToJson();
  EXPECT_NE(stats.ToString().find("object stores: "), std::string::npos) << stats.ToString();
}

TEST_F(RemoteSourcesTest, TextLineDatasetReadsObjects) {
  EXPECT_EQ(Strings(TextLineDataset({"s3://data/text/a.txt", "s3://data/text/b.txt"})),
            (std::vector<std::string>{"alpha", "beta", "gamma"}));
}

TEST_F(RemoteSourcesTest, MissingShardNamesTheUri) {
  auto it = TFRecordDataset({"s3://data/train/missing.tfrecord"}).iterator();
  Status s = it.ok() ? it->next().status() : it.status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("s3://data/train/missing.tfrecord"), std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace sluice
