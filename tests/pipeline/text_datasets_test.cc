// TextLineDataset, CsvDataset and MakeCsvDataset on the file source: the
// shared conformance suite, the order of parallel reads, errors naming
// file:line: column, ignore_errors skipping exactly a bad row, arguments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../records/text_test_util.h"
#include "conformance.h"
#include "ignore_errors_util.h"
#include "sluice/pipeline/text_datasets.h"
#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadAll;
using testing::RunConformance;
using testing::ScratchDir;
using testing::WriteFileOrDie;

std::string Line(int file, int line) { return "f" + std::to_string(file) + " line " + std::to_string(line); }

// Files of `counts[f]` lines, every third one gzip.
std::vector<std::string> WriteTextFiles(const ScratchDir& dir, const std::vector<int>& counts) {
  std::vector<std::string> paths;
  for (size_t f = 0; f < counts.size(); ++f) {
    std::string text;
    for (int i = 0; i < counts[f]; ++i) text += Line(static_cast<int>(f), i) + (i % 2 ? "\r\n" : "\n");
    const Compression c = f % 3 == 2 ? Compression::kGzip : Compression::kNone;
    paths.push_back(dir.file("t" + std::to_string(f) + (f % 3 == 2 ? ".txt.gz" : ".txt")));
    WriteFileOrDie(paths.back(), testing::Compress(text, c));
  }
  return paths;
}

std::vector<std::string> Strings(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(Element({Tensor::StringScalar(s)}).DebugString(1000));
  return out;
}

// Round robin over `counts` with `n` files open at once (file_source.h).
std::vector<std::string> RoundRobin(const std::vector<int>& counts, size_t n) {
  std::vector<std::string> out;
  std::vector<std::pair<int, int>> slots;  // file, next line
  size_t next = 0;
  while (slots.size() < n && next < counts.size()) slots.push_back({static_cast<int>(next++), 0});
  for (size_t k = 0; !slots.empty();) {
    auto& s = slots[k];
    if (s.second < counts[static_cast<size_t>(s.first)]) {
      out.push_back(Line(s.first, s.second++));
      k = (k + 1) % slots.size();
      continue;
    }
    if (next < counts.size()) {
      s = {static_cast<int>(next++), 0};
    } else {
      slots.erase(slots.begin() + static_cast<ptrdiff_t>(k));
      if (!slots.empty()) k %= slots.size();
    }
  }
  return out;
}

TEST(TextLineDatasetTest, Conformance) {
  ScratchDir dir;
  const std::vector<int> counts = {5, 0, 7, 3};
  const auto files = WriteTextFiles(dir, counts);
  RunConformance({.name = "TextLineDataset",
                  .make = [&](int) { return TextLineDataset(files, {.buffer_size = 4096}); },
                  .expected = Strings(RoundRobin(counts, 1))});
  RunConformance({.name = "TextLineDataset_parallel",
                  .make =
                      [&](int) {
                        return TextLineDataset(files,
                                               {.buffer_size = 4096, .num_parallel_reads = 3});
                      },
                  .expected = Strings(RoundRobin(counts, 3))});
  RunConformance({.name = "textlines",
                  .make =
                      [&](int p) {
                        return Dataset::list_files(dir.file("t*")).interleave(textlines(), {.cycle_length = 1, .parallelism = p});
                      },
                  .expected = Strings(RoundRobin(counts, 1))});
}

TEST(TextLineDatasetTest, LongLineErrorNamesFileLineOffsetAndIsSkipped) {
  ScratchDir dir;
  const std::string path = dir.file("long.txt");
  WriteFileOrDie(path, "a\n" + std::string(20000, 'x') + "\nb\n");
  auto ds = TextLineDataset({path}, {.buffer_size = 4096, .max_line_size = 5000});
  auto got = testing::ReadIgnoringErrors(ds);
  EXPECT_EQ(got.records, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(got.skipped, 1);
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_NE(got.errors[0].find(path + ": line 2 at offset 2"), std::string::npos) << got.errors[0];
}

std::vector<CsvDefault> Defaults3() {
  return {CsvDefault::Required(DType::kInt64), CsvDefault::Value(0.5f), CsvDefault::Value("none")};
}

std::string Row(int file, int row) {
  return std::to_string(file * 100 + row) + "," + (row % 3 ? std::to_string(row) + ".25" : "") +
         ",\"r" + std::to_string(row) + (row % 4 == 0 ? "\n\"\"x\"\"" : "") + "\"";
}

std::string RowElement(int file, int row) {
  std::vector<Tensor> t = {Tensor::Scalar<int64_t>(file * 100 + row),
                           Tensor::Scalar(row % 3 ? static_cast<float>(row) + 0.25f : 0.5f),
                           Tensor::StringScalar("r" + std::to_string(row) +
                                                (row % 4 == 0 ? "\n\"x\"" : ""))};
  return Element(std::move(t)).DebugString(1000);
}

TEST(CsvDatasetTest, Conformance) {
  ScratchDir dir;
  std::vector<std::string> files;
  std::vector<std::string> expected;
  const int counts[] = {6, 1, 9};
  for (int f = 0; f < 3; ++f) {
    std::string text = "id,x,name\r\n";
    for (int r = 0; r < counts[f]; ++r) {
      text += Row(f, r) + "\r\n";
      expected.push_back(RowElement(f, r));
    }
    files.push_back(dir.file("c" + std::to_string(f) + ".csv"));
    WriteFileOrDie(files.back(), testing::Compress(text, f == 1 ? Compression::kZlib : Compression::kNone));
  }
  RunConformance({.name = "CsvDataset",
                  .make = [&](int) { return CsvDataset(files, Defaults3(), {.header = true}); },
                  .expected = expected,
                  .make_failing =
                      [&] {
                        return CsvDataset(files, {CsvDefault::Required(DType::kInt32)},
                                          {.header = true, .select_cols = {1}});
                      },
                  .error_substring = "c0.csv:2: column 2: the field is empty"});
  RunConformance({.name = "CsvDataset_parallel",
                  .make =
                      [&](int) {
                        return CsvDataset(files, Defaults3(),
                                          {.header = true, .num_parallel_reads = 2});
                      }});
}

TEST(CsvDatasetTest, ErrorsNameFileLineAndColumn) {
  // The iterator stops at its first error (ignore_errors goes on past it):
  // one file per error, each after good rows, one of them over two lines.
  const std::string good = "1,2,3\n\"a\nb\",1,3\n";
  const std::pair<std::string, std::string> cases[] = {
      {"1,2,3\n\"a\nb\",x,3\n", ":3: column 2: 'x' is not a valid int32"},
      {good + "4,5\n", ":4: column 3: the record has 2 fields, 3 expected"},
      {good + "4,5,6\n6,7,8,9\n", ":5: column 4: the record has 4 fields, 3 expected"},
      {good + "4,5,6\n6,7,8\n7,,8\n", ":6: column 2: the field is empty and the column is required"},
  };
  ScratchDir dir;
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(error);
    const std::string path = dir.file("data.csv");
    WriteFileOrDie(path, text);
    auto ds = CsvDataset({path}, {CsvDefault::Value("s"), CsvDefault::Required(DType::kInt32),
                                  CsvDefault::Required(DType::kInt64)});
    SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
    Result<std::optional<Element>> next = it.next();
    while (next.ok() && next->has_value()) next = it.next();
    SLUICE_EXPECT_ERROR(next, StatusCode::kInvalidArgument, path + error);
  }
}

TEST(CsvDatasetTest, IgnoreErrorsSkipsExactlyTheBadRow) {
  ScratchDir dir;
  const std::string path = dir.file("rows.csv");
  WriteFileOrDie(path, "a,1\nb,\"x\"y\nc,2\nd,zz\ne,3\n\"f\nf\",4\n");
  auto ds = CsvDataset({path}, {CsvDefault::Required(DType::kString),
                                CsvDefault::Required(DType::kInt64)});
  auto got = testing::ReadIgnoringErrors(ds);
  EXPECT_EQ(got.records, (std::vector<std::string>{"a", "c", "e", "f\nf"}));
  EXPECT_EQ(got.skipped, 2);
  ASSERT_EQ(got.errors.size(), 2u);
  EXPECT_NE(got.errors[0].find(path + ":2: column 2:"), std::string::npos) << got.errors[0];
  EXPECT_NE(got.errors[1].find(path + ":4: column 2:"), std::string::npos) << got.errors[1];
}

TEST(CsvDatasetTest, OpenQuoteEndsTheFileWithItsLineAndColumn) {
  ScratchDir dir;
  const std::string a = dir.file("a.csv"), b = dir.file("b.csv");
  WriteFileOrDie(a, "1\n\"2\n3\n");
  WriteFileOrDie(b, "4\n");
  auto got = testing::ReadIgnoringErrors(
      CsvDataset({a, b}, {CsvDefault::Required(DType::kString)}));
  EXPECT_EQ(got.records, (std::vector<std::string>{"1", "4"}));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_NE(got.errors[0].find(a + ":2: column 1:"), std::string::npos) << got.errors[0];
}

TEST(CsvDatasetTest, SelectAndExcludeColumns) {
  ScratchDir dir;
  const std::string path = dir.file("s.csv");
  WriteFileOrDie(path, "1,2,3,4\n5,6,7,8\n");
  const auto i64 = CsvDefault::Required(DType::kInt64);
  auto sel = ReadAll(CsvDataset({path}, {i64, i64}, {.select_cols = {1, 3}}));
  auto exc = ReadAll(CsvDataset({path}, {i64, i64}, {.exclude_cols = {0, 2}}));
  std::vector<std::string> want;
  for (int64_t r : {0, 1}) {
    want.push_back(Element({Tensor::Scalar<int64_t>(r * 4 + 2), Tensor::Scalar<int64_t>(r * 4 + 4)})
                       .DebugString(1000));
  }
  EXPECT_EQ(sel, want);
  EXPECT_EQ(exc, want);
}

TEST(CsvDatasetTest, ArgumentsAreCheckedAsTfData) {
  const auto i64 = CsvDefault::Required(DType::kInt64);
  struct Case {
    std::vector<CsvDefault> defaults;
    CsvDatasetOptions options;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{}, {}, "record_defaults is empty"},
      {{CsvDefault::Required(DType::kBool)}, {}, "expected int32"},
      {{{DType::kInt32, Tensor::Scalar<int64_t>(1)}}, {}, "one int32 value"},
      {{i64, i64}, {.select_cols = {0, 1}, .exclude_cols = {2}}, "either select_cols"},
      {{i64, i64}, {.select_cols = {2, 0}}, "strictly increasing"},
      {{i64}, {.exclude_cols = {-1}}, ">= 0"},
      {{i64}, {.select_cols = {0, 1}}, "must match"},
      {{i64}, {.field_delim = '\n'}, "field_delim"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    auto it = CsvDataset({"x.csv"}, c.defaults, c.options).iterator();
    SLUICE_EXPECT_ERROR(it, StatusCode::kInvalidArgument, c.error);
  }
}

TEST(MakeCsvDatasetTest, NamesFromHeaderTypesInferredLabelLast) {
  ScratchDir dir;
  WriteFileOrDie(dir.file("m0.csv"), "label,count,ratio,big,word\n1,3,0.5,9999999999,a\n0,,1e3,1,b\n");
  WriteFileOrDie(dir.file("m1.csv"), "label,count,ratio,big,word\n1,4,2,5,c\n");
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Dataset ds, MakeCsvDataset(dir.file("m*.csv"), 2,
                                 {.label_name = "label", .num_epochs = 1, .shuffle = false}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Iterator it, ds.iterator());
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> b, it.next());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->names(), (std::vector<std::string>{"count", "ratio", "big", "word", "label"}));
  EXPECT_EQ((*b)[0].dtype(), DType::kInt32);
  EXPECT_EQ((*b)[1].dtype(), DType::kFloat32);
  EXPECT_EQ((*b)[2].dtype(), DType::kInt64);
  EXPECT_EQ((*b)[3].dtype(), DType::kString);
  EXPECT_EQ((*b)[4].dtype(), DType::kInt32);
  EXPECT_EQ((*b)[0].flat<int32_t>()[1], 0);  // empty: the inferred default
  EXPECT_EQ((*b)[1].flat<float>()[1], 1000.0f);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> last, it.next());
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ((*last)[0].shape(), Shape{1});  // the remainder, with num_epochs = 1
  SLUICE_ASSERT_OK_AND_ASSIGN(std::optional<Element> end, it.next());
  EXPECT_FALSE(end.has_value());
}

TEST(MakeCsvDatasetTest, SelectColumnsAndErrors) {
  ScratchDir dir;
  WriteFileOrDie(dir.file("a.csv"), "x,y,z\n1,2,3\n");
  WriteFileOrDie(dir.file("b.csv"), "x,y,w\n1,2,3\n");
  SLUICE_ASSERT_OK_AND_ASSIGN(
      Dataset ds, MakeCsvDataset(dir.file("a.csv"), 4,
                                 {.select_columns = {"z", "x"}, .num_epochs = 1}));
  auto rows = ReadAll(ds);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].find("x"), std::string::npos);
  EXPECT_EQ(rows[0].find("y"), std::string::npos);
  SLUICE_EXPECT_ERROR(MakeCsvDataset(dir.file("*.csv"), 4), StatusCode::kInvalidArgument,
                      "other column names");
  SLUICE_EXPECT_ERROR(MakeCsvDataset(dir.file("a.csv"), 4, {.label_name = "nope"}),
                      StatusCode::kInvalidArgument, "label_name 'nope'");
  SLUICE_EXPECT_ERROR(MakeCsvDataset(dir.file("a.csv"), 4, {.select_columns = {"q"}}),
                      StatusCode::kInvalidArgument, "no column named 'q'");
  SLUICE_EXPECT_ERROR(MakeCsvDataset(dir.file("none*.csv"), 4), StatusCode::kNotFound, "none");
}

}  // namespace
}  // namespace sluice
