// SplitCsvRecord, ParseCsvNumber and CsvReader: RFC 4180 quoting in tf.data's
// dialect, records spanning lines, line and column numbers in errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sluice/records/csv.h"
#include "sluice/records/csv_reader.h"
#include "test_util.h"
#include "text_test_util.h"

namespace sluice {
namespace {

using Fields = std::vector<std::string>;

Fields Split(std::string_view record, CsvDialect d = {}) {
  std::vector<CsvField> fields;
  std::string scratch;
  CsvSyntaxError err;
  if (!SplitCsvRecord(record, d, &fields, &scratch, &err)) return {"ERROR col " + std::to_string(err.column)};
  Fields out;
  for (const CsvField& f : fields) out.emplace_back(f.text);
  return out;
}

TEST(SplitCsvRecord, Fields) {
  EXPECT_EQ(Split("a,b,c"), (Fields{"a", "b", "c"}));
  EXPECT_EQ(Split(""), Fields{""});
  EXPECT_EQ(Split(",,"), (Fields{"", "", ""}));
  EXPECT_EQ(Split(" a , b "), (Fields{" a ", " b "}));
  EXPECT_EQ(Split("a\tb,c", {.field_delim = '\t'}), (Fields{"a", "b,c"}));
  EXPECT_EQ(Split("a;b", {.field_delim = ';'}), (Fields{"a", "b"}));
}

TEST(SplitCsvRecord, Quotes) {
  EXPECT_EQ(Split(R"("a,b","c""d","")"), (Fields{"a,b", "c\"d", ""}));
  EXPECT_EQ(Split("\"multi\nline\",x"), (Fields{"multi\nline", "x"}));
  EXPECT_EQ(Split(R"("""","""""")"), (Fields{"\"", "\"\""}));
  EXPECT_EQ(Split(R"(x,"a""b""c")"), (Fields{"x", "a\"b\"c"}));
  // Without use_quote_delim quotes are ordinary characters.
  EXPECT_EQ(Split(R"("a",b"c)", {.use_quote_delim = false}), (Fields{"\"a\"", "b\"c"}));
}

TEST(SplitCsvRecord, SyntaxErrorsNameColumnAndLine) {
  std::vector<CsvField> fields;
  std::string scratch;
  CsvSyntaxError err;
  auto split = [&](std::string_view r) { return SplitCsvRecord(r, {}, &fields, &scratch, &err); };
  EXPECT_FALSE(split("a,b\"c"));
  EXPECT_EQ(err.column, 2u);
  EXPECT_FALSE(split("\"x\ny\",\"b\"c"));
  EXPECT_EQ(err.column, 2u);
  EXPECT_EQ(err.line_offset, 1u);
  EXPECT_FALSE(split("a,\"open"));
  EXPECT_EQ(err.column, 2u);
  EXPECT_NE(err.message.find("closing quote"), std::string::npos);
  // Line offsets of fields after quoted line breaks.
  ASSERT_TRUE(split("\"a\n\nb\",c"));
  EXPECT_EQ(fields[1].line_offset, 2u);
}

TEST(CsvNumbers, IntegersAsTensorFlowReadsThem) {
  int32_t i32 = 0;
  int64_t i64 = 0;
  EXPECT_TRUE(ParseCsvNumber(" 12 ", &i32));
  EXPECT_EQ(i32, 12);
  EXPECT_TRUE(ParseCsvNumber("+7", &i32));
  EXPECT_EQ(i32, 7);
  EXPECT_TRUE(ParseCsvNumber("-2147483648", &i32));
  EXPECT_EQ(i32, std::numeric_limits<int32_t>::min());
  EXPECT_FALSE(ParseCsvNumber("2147483648", &i32));
  EXPECT_TRUE(ParseCsvNumber("9223372036854775807", &i64));
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::max());
  for (const char* bad : {"1.5", "0x10", "1 2", "", " ", "+-1", "1_0", "one"}) {
    EXPECT_FALSE(ParseCsvNumber(bad, &i64)) << bad;
  }
}

TEST(CsvNumbers, FloatsAsTensorFlowReadsThem) {
  double d = 0;
  float f = 0;
  EXPECT_TRUE(ParseCsvNumber(".5", &d));
  EXPECT_EQ(d, 0.5);
  EXPECT_TRUE(ParseCsvNumber("-.5e1", &d));
  EXPECT_EQ(d, -5.0);
  EXPECT_TRUE(ParseCsvNumber("0x1p3", &d));
  EXPECT_EQ(d, 8.0);
  EXPECT_TRUE(ParseCsvNumber("-0x1p3", &d));
  EXPECT_EQ(d, -8.0);
  EXPECT_TRUE(ParseCsvNumber("-Infinity", &d));
  EXPECT_EQ(d, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(ParseCsvNumber("NaN", &f));
  EXPECT_TRUE(std::isnan(f));
  EXPECT_TRUE(ParseCsvNumber("1e400", &f));
  EXPECT_EQ(f, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(ParseCsvNumber("-1e400", &d));
  EXPECT_EQ(d, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(ParseCsvNumber("1e-50", &f));
  EXPECT_EQ(f, 0.0f);
  EXPECT_TRUE(ParseCsvNumber("0.1", &f));
  EXPECT_EQ(f, 0.1f);  // rounded once, to float
  for (const char* bad : {"1.5f", "", "--1", "1e", "0x", "1,5"}) {
    EXPECT_FALSE(ParseCsvNumber(bad, &d)) << bad;
  }
}

struct CsvRead {
  std::vector<std::string> records;
  std::vector<uint64_t> lines;
  std::vector<uint64_t> offsets;
  Status error;
};

CsvRead ReadCsv(std::string bytes, CsvReaderOptions opts = {}, std::string name = "d.csv") {
  CsvRead out;
  auto reader = OpenCsvReader(NewMemoryFile(name, std::move(bytes)), opts);
  if (!reader.ok()) {
    out.error = reader.status();
    return out;
  }
  while (true) {
    auto r = (*reader)->Next();
    if (!r.ok()) {
      out.error = r.status();
      return out;
    }
    if (!r->has_value()) return out;
    EXPECT_EQ((*r)->number, out.records.size());
    out.records.emplace_back((*r)->data);
    out.lines.push_back((*r)->line);
    out.offsets.push_back((*r)->offset);
  }
}

TEST(CsvReader, RecordsSpanQuotedLineBreaks) {
  CsvRead r = ReadCsv("a,\"b\nc\",d\r\n1,\"x\r\ny\"\r2,3\n\nlast");
  ASSERT_TRUE(r.error.ok()) << r.error;
  EXPECT_EQ(r.records, (Fields{"a,\"b\nc\",d", "1,\"x\r\ny\"", "2,3", "", "last"}));
  EXPECT_EQ(r.lines, (std::vector<uint64_t>{1, 3, 5, 6, 7}));
  EXPECT_EQ(r.offsets, (std::vector<uint64_t>{0, 11, 20, 24, 25}));
}

TEST(CsvReader, LoneCarriageReturnsEndRecords) {
  CsvRead r = ReadCsv("a,\"b\rc\"\rd,e\r");
  ASSERT_TRUE(r.error.ok()) << r.error;
  EXPECT_EQ(r.records, (Fields{"a,\"b\rc\"", "d,e"}));
}

TEST(CsvReader, HeaderIsSkipped) {
  CsvRead r = ReadCsv("\"name\nwith break\",b\n1,2\n", {.header = true});
  EXPECT_EQ(r.records, Fields{"1,2"});
  EXPECT_EQ(r.lines, std::vector<uint64_t>{3});
  EXPECT_TRUE(ReadCsv("h1,h2\n", {.header = true}).records.empty());
  EXPECT_TRUE(ReadCsv("", {.header = true}).records.empty());
}

TEST(CsvReader, QuotesAreOrdinaryWithoutQuoteDelim) {
  CsvRead r = ReadCsv("\"a\nb\"\n", {.dialect = {.use_quote_delim = false}});
  EXPECT_EQ(r.records, (Fields{"\"a", "b\""}));
}

// The same records whatever the buffer size and compression: every record
// crosses a buffer end somewhere, including "\r\n" split between buffers.
TEST(CsvReader, SameRecordsAcrossBuffersAndCompressions) {
  std::string text;
  Fields expected;
  for (int i = 0; i < 3000; ++i) {
    std::string rec = std::to_string(i) + ",\"q" + std::string(i % 37, '"') + std::string(i % 37, '"') +
                      (i % 5 == 0 ? "\r\n" : "") + "\"," + std::string(i % 101, 'v');
    expected.push_back(rec);
    text += rec + (i % 2 ? "\r\n" : (i % 3 ? "\n" : "\r"));
  }
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    for (size_t buffer : {size_t{4096}, size_t{4097}, size_t{1} << 20}) {
      SCOPED_TRACE(std::string(CompressionName(c)) + " " + std::to_string(buffer));
      CsvRead r = ReadCsv(testing::Compress(text, c), {.buffer_size = buffer});
      ASSERT_TRUE(r.error.ok()) << r.error;
      EXPECT_EQ(r.records, expected);
    }
  }
}

TEST(CsvReader, OpenQuoteAtTheEndNamesLineAndColumn) {
  CsvRead r = ReadCsv("ok,1\nx,y\nz,\"open\nmore\n", {}, "data.csv");
  EXPECT_EQ(r.records, (Fields{"ok,1", "x,y"}));
  SLUICE_EXPECT_ERROR(r.error, StatusCode::kInvalidArgument, "data.csv:3: column 2:");
  EXPECT_NE(r.error.message().find("offset 9"), std::string::npos) << r.error;
}

TEST(CsvReader, LongRecordIsAnErrorAndIsSkipped) {
  const std::string text = "a,b\n\"" + std::string(50000, 'x') + "\nstill quoted\",1\nc,d\n";
  auto reader = OpenCsvReader(NewMemoryFile("big.csv", text),
                              {.buffer_size = 4096, .max_record_size = 8192});
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->Next().ok());
  SLUICE_EXPECT_ERROR((*reader)->Next(), StatusCode::kInvalidArgument,
                      "big.csv: record 2 at offset 4");
  EXPECT_EQ((*reader)->next_record_number(), 2u);
  auto after = (*reader)->Next();
  ASSERT_TRUE(after.ok() && after->has_value()) << after.status();
  EXPECT_EQ((*after)->data, "c,d");
  EXPECT_EQ((*after)->line, 4u);
}

TEST(CsvReader, RefusesDelimitersThatCannotSeparate) {
  for (char c : {'\n', '\r', '"'}) {
    SLUICE_EXPECT_ERROR(OpenCsvReader(NewMemoryFile("x.csv", "a"), {.dialect = {.field_delim = c}}),
                        StatusCode::kInvalidArgument, "field_delim");
  }
}

}  // namespace
}  // namespace sluice
