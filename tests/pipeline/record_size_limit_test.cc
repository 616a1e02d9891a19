// TFRecordDatasetOptions::max_record_size (issue 37 item 7): a record longer
// than the cap is refused before anything is allocated for it, naming the
// file and the offset, on every read path; a small compressed file cannot
// claim gigabytes.
#include <gtest/gtest.h>

#include "sluice/pipeline/dataset.h"
#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_writer.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ScratchDir;

void Write(const std::string& path, Compression c, const std::vector<size_t>& lengths, bool index) {
  TFRecordWriterOptions opts;
  opts.compression = c;
  opts.write_index = index;
  SLUICE_ASSERT_OK_AND_ASSIGN(TFRecordWriter w, TFRecordWriter::Open(path, opts));
  for (size_t n : lengths) SLUICE_ASSERT_OK(w.Write(std::string(n, 'z')));
  SLUICE_ASSERT_OK(w.Close());
}

TEST(RecordSizeLimitTest, DefaultIs256MiB) {
  EXPECT_EQ(TFRecordDatasetOptions().max_record_size, int64_t{256} << 20);
}

TEST(RecordSizeLimitTest, ALongerRecordIsDataLossNamingFileAndOffset) {
  ScratchDir dir;
  struct Case {
    Compression c;
    bool index;
    int64_t reads;
  } cases[] = {{Compression::kGzip, false, 1},
               {Compression::kZlib, false, 2},
               {Compression::kNone, false, 1},
               {Compression::kNone, true, 1},
               {Compression::kNone, false, 2}};
  for (const Case& k : cases) {
    const std::string path = dir.file("f-" + std::string(CompressionName(k.c)) +
                                      (k.index ? "-idx" : "") + std::to_string(k.reads));
    SCOPED_TRACE(path);
    Write(path, k.c, {100, 3 << 20, 100}, k.index);
    TFRecordDatasetOptions o;
    o.max_record_size = 1 << 20;
    o.num_parallel_reads = k.reads;
    o.compression = k.c;
    Dataset ds = TFRecordDataset({path, path}, o);
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
    SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> first, it.next());
    ASSERT_TRUE(first.has_value());
    Result<std::optional<Element>> second = it.next();
    if (k.reads > 1 && second.ok()) second = it.next();  // the other file's first record
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kDataLoss) << second.status();
    EXPECT_NE(second.status().message().find(path), std::string_view::npos) << second.status();
    EXPECT_NE(second.status().message().find("offset 116"), std::string_view::npos)
        << second.status();
    EXPECT_NE(second.status().message().find("exceeds max_record_size 1048576"),
              std::string_view::npos)
        << second.status();
    // Raised, it reads.
    o.max_record_size = 4 << 20;
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator all, TFRecordDataset({path}, o).iterator());
    int n = 0;
    while (true) {
      SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> e, all.next());
      if (!e) break;
      ++n;
    }
    EXPECT_EQ(n, 3);
  }
  TFRecordDatasetOptions bad;
  bad.max_record_size = -1;
  EXPECT_EQ(TFRecordDataset({dir.file("f-gzip1")}, bad).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
