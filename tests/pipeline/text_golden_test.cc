// TextLineDataset and CsvDataset against what TensorFlow reads from the same
// files (tests/data/text/make_golden.py, golden.json): the same elements,
// and an error at the same place where TensorFlow fails.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sluice/pipeline/text_datasets.h"
#include "test_util.h"

namespace sluice {
namespace {

using nlohmann::json;

json Golden() { return json::parse(testing::ReadFileOrDie(testing::TestDataPath("text/golden.json"))); }
std::string Input(const std::string& name) { return testing::TestDataPath("text/inputs/" + name); }

std::string Hex(std::string_view s) {
  std::string out;
  char b[3];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof(b), "%02x", c);
    out += b;
  }
  return out;
}

std::string FloatHex(double v) {
  // Python's float.hex(): "0x1.8000000000000p+1", "-0x0.0p+0", "inf", "nan".
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0x0.0p+0" : "0x0.0p+0";
  int exp = 0;
  const double m = std::frexp(std::fabs(v), &exp);  // [0.5, 1)
  const uint64_t bits = static_cast<uint64_t>(std::ldexp(m, 53)) & ((uint64_t{1} << 52) - 1);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s0x1.%013llxp%+d", v < 0 ? "-" : "",
                static_cast<unsigned long long>(bits), exp - 1);
  return buf;
}

struct Got {
  std::vector<Element> elements;
  Status error;
};

Got ReadUntilError(const Dataset& ds) {
  Got g;
  auto it = ds.iterator();
  if (!it.ok()) {
    g.error = it.status();
    return g;
  }
  while (true) {
    auto e = it->next();
    if (!e.ok()) {
      g.error = e.status();
      return g;
    }
    if (!e->has_value()) return g;
    g.elements.push_back(std::move(**e));
  }
}

Compression CompressionOf(const std::string& tf) {
  return tf == "GZIP" ? Compression::kGzip : tf == "ZLIB" ? Compression::kZlib : Compression::kNone;
}

TEST(TextGoldenTest, TextLinesAsTensorFlowReadsThem) {
  const json g = Golden();
  ASSERT_GE(g["text"].size(), 10u);
  for (const json& c : g["text"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    for (Compression comp : {CompressionOf(c["compression"]), Compression::kAuto}) {
      Got got = ReadUntilError(TextLineDataset({Input(file)}, {.compression = comp, .buffer_size = 4096}));
      ASSERT_TRUE(got.error.ok()) << got.error;
      ASSERT_EQ(got.elements.size(), c["lines"].size());
      for (size_t i = 0; i < got.elements.size(); ++i) {
        const std::string_view line = got.elements[i][0].scalar<std::string_view>();
        const json& want = c["lines"][i];
        if (want.is_string()) {
          EXPECT_EQ(Hex(line), want.get<std::string>()) << "line " << i;
        } else {
          EXPECT_EQ(line.size(), want["size"].get<size_t>()) << "line " << i;
          EXPECT_EQ(crc32(0, reinterpret_cast<const Bytef*>(line.data()), static_cast<uInt>(line.size())),
                    want["crc32"].get<uint32_t>())
              << "line " << i;
        }
      }
    }
  }
}

CsvDefault DefaultOf(const json& d) {
  const Result<DType> dtype = DTypeFromName(d["dtype"].get<std::string>());
  EXPECT_TRUE(dtype.ok());
  const json& v = d["default"];
  if (v.is_null()) return CsvDefault::Required(*dtype);
  switch (*dtype) {
    case DType::kInt32: return CsvDefault::Value(v.get<int32_t>());
    case DType::kInt64: return CsvDefault::Value(v.get<int64_t>());
    case DType::kFloat32: return CsvDefault::Value(v.get<float>());
    case DType::kFloat64: return CsvDefault::Value(v.get<double>());
    default: return CsvDefault::Value(v.get<std::string>());
  }
}

json ValueJson(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kInt32: return t.scalar<int32_t>();
    case DType::kInt64: return t.scalar<int64_t>();
    case DType::kFloat32: return FloatHex(t.scalar<float>());
    case DType::kFloat64: return FloatHex(t.scalar<double>());
    default: return Hex(t.scalar<std::string_view>());
  }
}

TEST(TextGoldenTest, CsvRowsAsTensorFlowReadsThem) {
  const json g = Golden();
  ASSERT_GE(g["csv"].size(), 20u);
  int errors = 0;
  for (const json& c : g["csv"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    std::vector<CsvDefault> defaults;
    for (const json& d : c["defaults"]) defaults.push_back(DefaultOf(d));
    const json& o = c["options"];
    CsvDatasetOptions opts{.compression = CompressionOf(c["compression"]), .buffer_size = 4096};
    if (o.contains("header")) opts.header = o["header"];
    if (o.contains("field_delim")) opts.field_delim = o["field_delim"].get<std::string>()[0];
    if (o.contains("use_quote_delim")) opts.use_quote_delim = o["use_quote_delim"];
    if (o.contains("na_value")) opts.na_value = o["na_value"];
    if (o.contains("select_cols")) opts.select_cols = o["select_cols"].get<std::vector<int64_t>>();
    if (o.contains("exclude_cols")) opts.exclude_cols = o["exclude_cols"].get<std::vector<int64_t>>();
    Got got = ReadUntilError(CsvDataset({Input(file)}, defaults, opts));
    json rows = json::array();
    for (const Element& e : got.elements) {
      json row = json::array();
      for (size_t k = 0; k < e.size(); ++k) row.push_back(ValueJson(e[k]));
      rows.push_back(row);
    }
    EXPECT_EQ(rows, c["rows"]);
    if (c["error"].is_null()) {
      EXPECT_TRUE(got.error.ok()) << got.error;
    } else {
      ++errors;
      EXPECT_EQ(got.error.code(), StatusCode::kInvalidArgument)
          << got.error << " (TensorFlow: " << c["error"]["message"] << ")";
      // Ours names the file and the line.
      EXPECT_NE(got.error.message().find(Input(file) + ":"), std::string::npos) << got.error;
    }
  }
  EXPECT_GE(errors, 10);
}

}  // namespace
}  // namespace sluice
