// ParquetFile over pyarrow's golden files (tests/data/parquet/make_golden.py
// says what each holds): every type, nulls, the Hugging Face image column,
// dictionaries and zstd, projection, batches, and broken or hostile files.
#include "sluice/records/parquet_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::TestDataPath;

std::string Pq(const std::string& f) { return TestDataPath("parquet/" + f); }

#define SKIP_WITHOUT_PARQUET()                                                             \
  if (!ParquetAvailable()) {                                                               \
    Result<std::shared_ptr<const ParquetFile>> f = ParquetFile::Open(Pq("types.parquet")); \
    EXPECT_EQ(f.status().code(), StatusCode::kFailedPrecondition);                         \
    GTEST_SKIP() << "built without Apache Arrow C++";                                      \
  }

std::shared_ptr<const ParquetFile> OpenOrDie(const std::string& f, ParquetReadOptions o = {}) {
  Result<std::shared_ptr<const ParquetFile>> r = ParquetFile::Open(Pq(f), o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : nullptr;
}

// Every record of `file`, as elements (read with runs of `max_bytes`).
std::vector<Element> ReadElements(const ParquetFile& file, size_t max_bytes = 1 << 20) {
  std::vector<Element> out;
  uint64_t i = 0;
  while (i < file.num_records()) {
    Result<std::vector<Record>> run = file.ReadRun(i, max_bytes);
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) break;
    for (const Record& r : *run) {
      EXPECT_EQ(r.number, i);
      Result<Element> e = ParquetRecordToElement(r);
      EXPECT_TRUE(e.ok()) << e.status();
      if (e.ok()) out.push_back(*std::move(e));
      ++i;
    }
  }
  return out;
}

std::string Str(const Tensor& t, int64_t k = 0) {
  return std::string(t.flat<std::string_view>()[static_cast<size_t>(k)]);
}

TEST(ParquetFileTest, EveryTypeOfTheGoldenFile) {
  SKIP_WITHOUT_PARQUET();
  auto f = OpenOrDie("types.parquet");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->num_rows(), 10);
  EXPECT_EQ(f->num_records(), 10u);
  EXPECT_EQ(f->num_row_groups(), 3);
  std::vector<std::string> names;
  for (const ParquetComponent& c : f->components()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"i8",   "i16",    "i32",    "i64",  "u8",  "u16",
                                             "u32",  "u64",    "f16",    "f32",  "f64", "b",
                                             "s",    "bin",    "fsl",    "fsl2", "vl",  "vls",
                                             "st.a", "st.b.c", "st.b.d", "ts",   "d32"}));
  const std::vector<Element> rows = ReadElements(*f, 100);  // small runs: several per group
  ASSERT_EQ(rows.size(), 10u);
  for (int64_t i = 0; i < 10; ++i) {
    SCOPED_TRACE(i);
    const Element& e = rows[static_cast<size_t>(i)];
    EXPECT_EQ(e.find("i8")->scalar<int32_t>(), i - 5);
    EXPECT_EQ(e.find("i16")->scalar<int32_t>(), 1000 * i - 3000);
    EXPECT_EQ(e.find("i32")->scalar<int32_t>(), 100000 * i);
    EXPECT_EQ(e.find("i64")->scalar<int64_t>(), 1000000000000 * i - 7);
    EXPECT_EQ(e.find("u8")->scalar<uint8_t>(), 25 * i);
    EXPECT_EQ(e.find("u16")->scalar<int32_t>(), 60000 + i);
    EXPECT_EQ(e.find("u32")->scalar<int64_t>(), 4000000000 + i);
    EXPECT_EQ(e.find("u64")->scalar<int64_t>(), (int64_t{1} << 62) + i);
    EXPECT_EQ(e.find("f16")->dtype(), DType::kFloat16);
    EXPECT_EQ(e.find("f32")->scalar<float>(), 1.5f * static_cast<float>(i));
    EXPECT_EQ(e.find("f64")->scalar<double>(), static_cast<double>(i) / 4);
    EXPECT_EQ(e.find("b")->scalar<bool>(), i % 3 == 0);
    EXPECT_EQ(Str(*e.find("s")), i == 7 ? "" : "row-" + std::to_string(i));
    EXPECT_EQ(Str(*e.find("bin")), std::string({static_cast<char>(i), '\0', '\xff'}));
    const Tensor& fsl = *e.find("fsl");
    EXPECT_EQ(fsl.shape(), Shape({3}));
    EXPECT_EQ(fsl.flat<float>()[1], static_cast<float>(i) + 0.25f);
    const Tensor& fsl2 = *e.find("fsl2");
    EXPECT_EQ(fsl2.shape(), Shape({2, 2}));
    EXPECT_EQ(fsl2.flat<int32_t>()[3], i + 3);
    const Tensor& vl = *e.find("vl");
    EXPECT_EQ(vl.shape(), Shape({i % 4}));
    for (int64_t k = 0; k < i % 4; ++k) EXPECT_EQ(vl.flat<int64_t>()[k], k);
    const Tensor& vls = *e.find("vls");
    EXPECT_EQ(vls.num_elements(), i % 3);
    if (i % 3 > 0) {
      EXPECT_EQ(Str(vls), "w" + std::to_string(i));
    }
    EXPECT_EQ(e.find("st.a")->scalar<int32_t>(), 2 * i);
    EXPECT_DOUBLE_EQ(e.find("st.b.c")->scalar<double>(), static_cast<double>(i) / 10);
    EXPECT_EQ(Str(*e.find("st.b.d")), "d" + std::to_string(i));
    EXPECT_EQ(e.find("ts")->scalar<int64_t>(), i * 1000000);
    EXPECT_EQ(e.find("d32")->scalar<int32_t>(), 19000 + i);
  }
}

TEST(ParquetFileTest, StringsViewArrowsBuffers) {
  SKIP_WITHOUT_PARQUET();
  auto f = OpenOrDie("types.parquet", {.columns = {"s", "i64"}});
  Result<std::vector<Record>> run = f->ReadRun(0, 1 << 20);
  ASSERT_TRUE(run.ok()) << run.status();
  Result<Element> a = ParquetRecordToElement((*run)[0]);
  Result<Element> b = ParquetRecordToElement((*run)[1]);
  ASSERT_TRUE(a.ok() && b.ok());
  // Rows of one row group share the decoded column: no copy per row.
  EXPECT_TRUE((*a)[0].string_owners()[0].SameAllocation((*b)[0].string_owners()[0]));
  EXPECT_TRUE((*a)[1].buffer().SameAllocation((*b)[1].buffer()));
}

TEST(ParquetFileTest, ProjectionAndBatches) {
  SKIP_WITHOUT_PARQUET();
  auto f = OpenOrDie("types.parquet", {.columns = {"vl", "i32"}, .batch_rows = 3});
  ASSERT_NE(f, nullptr);
  // Row groups of 4, 4, 2 rows: batches of 3, 1, 3, 1, 2 (never across groups).
  EXPECT_EQ(f->num_records(), 5u);
  std::vector<std::string> names;
  for (const ParquetComponent& c : f->components()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"vl", "vl.row_lengths", "i32"}));
  const std::vector<Element> batches = ReadElements(*f);
  ASSERT_EQ(batches.size(), 5u);
  const std::vector<int64_t> sizes{3, 1, 3, 1, 2};
  int64_t row = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    const Element& e = batches[b];
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[2].shape(), Shape({sizes[b]}));
    EXPECT_EQ(e[1].shape(), Shape({sizes[b]}));
    int64_t at = 0;
    for (int64_t k = 0; k < sizes[b]; ++k, ++row) {
      EXPECT_EQ(e[2].flat<int32_t>()[k], 100000 * row);
      EXPECT_EQ(e[1].flat<int64_t>()[k], row % 4);
      for (int64_t v = 0; v < row % 4; ++v) EXPECT_EQ(e[0].flat<int64_t>()[at + v], v);
      at += row % 4;
    }
    EXPECT_EQ(e[0].num_elements(), at);
  }
  Result<std::shared_ptr<const ParquetFile>> missing =
      ParquetFile::Open(Pq("types.parquet"), {.columns = {"nope"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().ToString().find("'nope'"), std::string::npos) << missing.status();
  EXPECT_NE(missing.status().ToString().find("i64"), std::string::npos) << missing.status();
}

TEST(ParquetFileTest, NullsAreErrorsNamingTheRowUnlessFilled) {
  SKIP_WITHOUT_PARQUET();
  auto f = OpenOrDie("nulls.parquet");
  ASSERT_NE(f, nullptr);
  std::vector<std::string> errors;
  std::vector<int64_t> good;
  for (uint64_t i = 0; i < f->num_records(); ++i) {
    Result<std::vector<Record>> run = f->ReadRun(i, 1);
    ASSERT_TRUE(run.ok()) << run.status();
    Result<Element> e = ParquetRecordToElement((*run)[0]);
    if (e.ok()) {
      good.push_back(e->find("ok")->scalar<int32_t>());
      if (i == 1) {
        EXPECT_EQ(e->find("vl")->num_elements(), 0);  // a null list is empty
      }
    } else {
      errors.push_back(e.status().ToString());
    }
  }
  // x null at 2, vl holds a null at 3, st null at 4, s null at 5.
  EXPECT_EQ(good, (std::vector<int64_t>{0, 1, 6, 7}));
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("nulls.parquet: row group 0, column 'x', row 2"), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("column 'vl', row 3"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("row group 1, column 'st.a', row 0 (row 4 of the file)"),
            std::string::npos)
      << errors[2];
  auto filled = OpenOrDie("nulls.parquet", {.fill_nulls = true});
  const std::vector<Element> rows = ReadElements(*filled);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[2].find("x")->scalar<int64_t>(), 0);
  EXPECT_EQ(rows[3].find("x")->scalar<int64_t>(), 3);
  EXPECT_EQ(Str(*rows[5].find("s")), "");
  EXPECT_EQ(Str(*rows[6].find("s")), "s6");
  EXPECT_EQ(rows[3].find("vl")->num_elements(), 2);
  EXPECT_EQ(rows[3].find("vl")->flat<int32_t>()[1], 0);
  EXPECT_EQ(rows[4].find("st.a")->scalar<int32_t>(), 0);
  EXPECT_EQ(rows[7].find("st.a")->scalar<int32_t>(), 7);
}

TEST(ParquetFileTest, HuggingFaceImageColumnIsTheEncodedBytes) {
  SKIP_WITHOUT_PARQUET();
  auto f = OpenOrDie("image.parquet");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->components().size(), 2u);
  EXPECT_EQ(f->components()[0].name, "image");
  EXPECT_EQ(f->components()[0].dtype, DType::kString);
  const std::vector<Element> rows = ReadElements(*f);
  ASSERT_EQ(rows.size(), 3u);
  const char* files[] = {"image_0.png", "image_1.jpg", "image_2.png"};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(Str(rows[k][0]), ReadFileOrDie(Pq(std::string("images/") + files[k])));
    EXPECT_EQ(rows[k][1].scalar<int64_t>(), k);
  }
}

TEST(ParquetFileTest, DictionaryStringsAndZstd) {
  SKIP_WITHOUT_PARQUET();
  auto f = OpenOrDie("dict_zstd.parquet", {.batch_rows = 128});
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->num_row_groups(), 4);
  EXPECT_EQ(f->num_rows(), 1000);
  const char* words[] = {"alpha", "beta", "gamma", "delta"};
  int64_t row = 0;
  for (const Element& e : ReadElements(*f)) {
    for (int64_t k = 0; k < e[2].num_elements(); ++k, ++row) {
      EXPECT_EQ(Str(e[0], k), words[row % 4]);
      EXPECT_EQ(Str(e[1], k), words[row % 4]);
      EXPECT_EQ(e[2].flat<int32_t>()[k], row);
    }
  }
  EXPECT_EQ(row, 1000);
}

TEST(ParquetFileTest, TypesWithoutATensorFormAreNamed) {
  SKIP_WITHOUT_PARQUET();
  Result<std::shared_ptr<const ParquetFile>> f = ParquetFile::Open(Pq("map.parquet"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().ToString().find("map.parquet"), std::string::npos) << f.status();
  EXPECT_NE(f.status().ToString().find("'m'"), std::string::npos) << f.status();
}

TEST(ParquetFileTest, ACorruptRowGroupIsAnErrorOfItsRowsOnly) {
  SKIP_WITHOUT_PARQUET();
  auto f = OpenOrDie("corrupt_rg1.parquet");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->num_records(), 12u);
  for (uint64_t i = 0; i < 12; ++i) {
    Result<std::vector<Record>> run = f->ReadRun(i, 1);
    if (i >= 4 && i < 8) {
      ASSERT_FALSE(run.ok()) << i;
      EXPECT_NE(run.status().ToString().find("corrupt_rg1.parquet: row group 1"), std::string::npos)
          << run.status();
      EXPECT_NE(run.status().ToString().find("column 'x'"), std::string::npos) << run.status();
      continue;
    }
    ASSERT_TRUE(run.ok()) << run.status();
    Result<Element> e = ParquetRecordToElement((*run)[0]);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ((*e)[0].scalar<int64_t>(), static_cast<int64_t>(i));
  }
}

// bomb.parquet: a few KiB on disk, 4 MiB per column decoded. Under a 1 MiB
// cap, "zeros" (the footer says 4 MiB) is refused before decoding and
// "rep" (the footer says 12 KiB; dictionary-encoded, it decodes to 4 MiB)
// when Arrow's pool passes the cap: ResourceExhausted naming the file, row
// group and column, every time it is asked.
TEST(ParquetFileTest, ARowGroupPastMaxRowGroupBytesIsResourceExhausted) {
  SKIP_WITHOUT_PARQUET();
  for (const std::string col : {"zeros", "rep"}) {
    SCOPED_TRACE(col);
    auto f = OpenOrDie("bomb.parquet", {.columns = {col}, .max_row_group_bytes = 1 << 20});
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->num_records(), 1024u);
    for (int again = 0; again < 2; ++again) {
      Result<std::vector<Record>> run = f->ReadRun(0, 1);
      ASSERT_FALSE(run.ok());
      EXPECT_EQ(run.status().code(), StatusCode::kResourceExhausted) << run.status();
      const std::string m = run.status().ToString();
      EXPECT_NE(m.find("bomb.parquet: row group 0"), std::string::npos) << m;
      EXPECT_NE(m.find("column '" + col + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("max_row_group_bytes = 1048576"), std::string::npos) << m;
      EXPECT_NE(m.find(col == "zeros" ? "the footer says" : "was refused"), std::string::npos) << m;
    }
  }
  // Under the default cap both read, the strings still views of Arrow's
  // buffers (which outlive the file and its pool).
  std::vector<Element> rows;
  {
    auto f = OpenOrDie("bomb.parquet", {.batch_rows = 512});
    ASSERT_NE(f, nullptr);
    rows = ReadElements(*f);
  }
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(Str(rows[1][0], 511), std::string(4096, 'r'));
  EXPECT_EQ(Str(rows[1][1], 511), std::string(4096, '\0'));
  EXPECT_EQ(ParquetFile::Open(Pq("bomb.parquet"), {.max_row_group_bytes = 0}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ParquetFileTest, HostileBytesAreErrorsNotCrashes) {
  SKIP_WITHOUT_PARQUET();
  const std::string good = ReadFileOrDie(Pq("types.parquet"));
  Result<std::shared_ptr<const ParquetFile>> empty =
      ParquetFile::Open(std::shared_ptr<ReadableFile>(NewMemoryFile("empty.parquet", "")));
  EXPECT_FALSE(empty.ok());
  EXPECT_NE(empty.status().ToString().find("empty.parquet"), std::string::npos) << empty.status();
  Result<std::shared_ptr<const ParquetFile>> text = ParquetFile::Open(
      std::shared_ptr<ReadableFile>(NewMemoryFile("text.parquet", "hello, this is not Parquet")));
  EXPECT_FALSE(text.ok());
  // Cut short anywhere, or a byte flipped: an error or other values, never a crash.
  for (size_t cut = 0; cut < good.size(); cut += 97) {
    for (bool flip : {false, true}) {
      std::string bytes = flip ? good : good.substr(0, cut);
      if (flip) bytes[cut] = static_cast<char>(bytes[cut] ^ 0x5a);
      Result<std::shared_ptr<const ParquetFile>> f =
          ParquetFile::Open(std::shared_ptr<ReadableFile>(NewMemoryFile("cut.parquet", bytes)));
      if (!f.ok()) continue;
      for (uint64_t i = 0; i < (*f)->num_records(); ++i) {
        Result<std::vector<Record>> run = (*f)->ReadRun(i, 1);
        if (run.ok()) (void)ParquetRecordToElement((*run)[0]);
      }
    }
  }
  Record notours;
  EXPECT_EQ(ParquetRecordToElement(notours).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
