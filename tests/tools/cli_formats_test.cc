// `sluice cat/count/verify/index` on the record formats beside TFRecord
// (tools/record_formats.h): chosen by extension or --format, corrupt input
// named with file and line or offset (Parquet: row group and column), exit
// status 1; and `sluice convert parquet`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "sluice/records/parquet_file.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::TestDataPath;
using testing::WriteFileOrDie;

struct CliRun {
  int exit_code;
  std::string out;
  std::string err;
};

CliRun Sluice(const ScratchDir& dir, const std::string& args) {
  const std::string cmd = std::string(SLUICE_BINARY) + " " + args + " > " + dir.file("stdout") +
                          " 2> " + dir.file("stderr") + " < /dev/null";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFileOrDie(dir.file("stdout")),
          ReadFileOrDie(dir.file("stderr"))};
}

TEST(CliFormatsTest, TextAndCsvByExtension) {
  ScratchDir dir;
  WriteFileOrDie(dir.file("a.txt"), "hello\r\nworld\n");
  WriteFileOrDie(dir.file("b.csv"), "x,y\n1,\"two\nlines\"\n3,4\n");
  CliRun r = Sluice(dir, "cat " + dir.file("a.txt") + " " + dir.file("b.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\nworld\nx,y\n1,\"two\\nlines\"\n3,4\n");
  r = Sluice(dir, "count " + dir.file("a.txt") + " " + dir.file("b.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2\t" + dir.file("a.txt") + "\n3\t" + dir.file("b.csv") + "\n5\ttotal\n");
  r = Sluice(dir, "verify " + dir.file("b.csv"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A record with another field count, and an open quote: named by line.
  WriteFileOrDie(dir.file("bad.csv"), "x,y\n1,2,3\n4,5\n\"open,6\n");
  r = Sluice(dir, "verify " + dir.file("bad.csv"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.csv:2: the record has 3 fields, the first has 2"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("2 bad records"), std::string::npos) << r.err;
  // --format overrides the extension; text files have no index.
  r = Sluice(dir, "count --format text " + dir.file("b.csv"));
  EXPECT_EQ(r.out, "4\t" + dir.file("b.csv") + "\n");
  r = Sluice(dir, "index " + dir.file("a.txt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("text files have no index"), std::string::npos) << r.err;
}

TEST(CliFormatsTest, TarShardsIndexedAndCorrupt) {
  ScratchDir dir;
  const std::string tar = dir.file("shard-000000.tar");
  std::filesystem::copy_file(TestDataPath("tar/ustar.tar"), tar);
  CliRun r = Sluice(dir, "count " + tar);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string counted = r.out;
  r = Sluice(dir, "index " + tar);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(tar + ".idx"), std::string::npos) << r.out;
  ASSERT_TRUE(std::filesystem::exists(tar + ".idx"));
  r = Sluice(dir, "count " + tar);  // now from the index
  EXPECT_EQ(r.out, counted);
  r = Sluice(dir, "cat -n 1 " + tar);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("train/000000: jpg=", 0), 0u) << r.out;  // key: each member
  // A header checksum broken: verify names the file and the offset.
  std::string bytes = ReadFileOrDie(tar);
  bytes[148] ^= 0x11;  // the first header's checksum field
  WriteFileOrDie(dir.file("bad.tar"), bytes);
  r = Sluice(dir, "verify " + dir.file("bad.tar"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.tar"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offset 0"), std::string::npos) << r.err;
}

TEST(CliFormatsTest, NumpyAndFixedLength) {
  ScratchDir dir;
  CliRun r = Sluice(dir, "count " + TestDataPath("npy/float32_10x3.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "10\t" + TestDataPath("npy/float32_10x3.npy") + "\n");
  r = Sluice(dir, "cat -n 1 " + TestDataPath("npy/float32_10x3.npy"));
  EXPECT_NE(r.out.find("float32[3]"), std::string::npos) << r.out;
  // 3 records of 4 bytes after a 2-byte header.
  WriteFileOrDie(dir.file("r.bin"), "HHaaaabbbbcccc");
  r = Sluice(dir, "cat -F fixedlength --record-bytes 4 --header-bytes 2 " + dir.file("r.bin"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "aaaa\nbbbb\ncccc\n");
  r = Sluice(dir, "count -F fixedlength --record-bytes 4 " + dir.file("r.bin"));
  EXPECT_EQ(r.exit_code, 1);  // 14 bytes are not whole records of 4
  EXPECT_NE(r.err.find("r.bin"), std::string::npos) << r.err;
  r = Sluice(dir, "count -F fixedlength " + dir.file("r.bin"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--record-bytes"), std::string::npos) << r.err;
}

// Parquet goldens (tests/data/parquet/make_golden.py): rows as elements,
// counts from the footer, nulls and a corrupt row group named, and
// `convert parquet` to TFRecord Examples.
TEST(CliFormatsTest, ParquetCatCountVerifyConvert) {
  if (!ParquetAvailable()) GTEST_SKIP() << "built without Apache Arrow C++";
  ScratchDir dir;
  const std::string types = TestDataPath("parquet/types.parquet");
  const std::string dict = TestDataPath("parquet/dict_zstd.parquet");
  const std::string nulls = TestDataPath("parquet/nulls.parquet");
  const std::string corrupt = TestDataPath("parquet/corrupt_rg1.parquet");
  CliRun r = Sluice(dir, "cat -n 2 " + types);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("(i8: int32[] {-5}, i16: int32[] {-3000}, ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("s: string[] {\"row-1\"}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fsl2: int32[2,2] {1, 2, 3, 4}"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  r = Sluice(dir, "count " + types + " " + dict);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "10\t" + types + "\n1000\t" + dict + "\n1010\ttotal\n");
  r = Sluice(dir, "verify " + types);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(types + ": OK, 10 records"), std::string::npos) << r.out;
  // A null is the row's error, named with row group, column and row.
  r = Sluice(dir, "verify " + nulls);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nulls.parquet: CORRUPT (4 bad records, 4 good ones)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("row group 0, column 'x', row 2 (row 2 of the file): a null value"),
            std::string::npos)
      << r.err;
  r = Sluice(dir, "cat " + nulls);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("column 'x', row 2"), std::string::npos) << r.err;
  // A corrupt row group: DataLoss naming it and the column.
  r = Sluice(dir, "verify " + corrupt);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("corrupt_rg1.parquet: CORRUPT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("DataLoss: " + corrupt + ": row group 1 (rows 4..8), column 'x'"),
            std::string::npos)
      << r.err;
  // convert parquet: one shard per input, every row an Example.
  r = Sluice(dir, "convert parquet " + types + " " + dict + " --out " + dir.file("pq"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("converted 1010 rows from 2 files into 2 shards"), std::string::npos)
      << r.out;
  r = Sluice(dir, "count " + dir.file("pq-00000-of-00002.tfrecord") + " " +
                      dir.file("pq-00001-of-00002.tfrecord"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1010\ttotal"), std::string::npos) << r.out;
  r = Sluice(dir, "verify " + dir.file("pq-00000-of-00002.tfrecord"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A null stops the shard (no partial output) unless --fill-nulls.
  r = Sluice(dir, "convert parquet " + nulls + " --out " + dir.file("n"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("column 'x', row 2 (row 2 of the file): a null value"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("n-00000-of-00001.tfrecord")));
  r = Sluice(dir, "convert parquet --fill-nulls " + nulls + " --out " + dir.file("n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Sluice(dir, "count " + dir.file("n-00000-of-00001.tfrecord"));
  EXPECT_EQ(r.out, "8\t" + dir.file("n-00000-of-00001.tfrecord") + "\n") << r.err;
  // A corrupt row group fails the conversion, named.
  r = Sluice(dir, "convert parquet " + corrupt + " --out " + dir.file("c"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("row group 1 (rows 4..8), column 'x'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("c-00000-of-00001.tfrecord")));
  // Parquet has no index of ours.
  r = Sluice(dir, "index " + types);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("footer"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sluice
