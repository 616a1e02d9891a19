// JsonWriter: strings escaped per RFC 8259 (control characters, quotes,
// backslashes; invalid UTF-8 replaced by U+FFFD), numbers, the layouts, and
// everything it writes read back by a real JSON parser (nlohmann-json).
#include "sluice/core/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice {
namespace {

using json = nlohmann::json;

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Every byte 0x00..0x7F, and text that is valid UTF-8 (2, 3 and 4 bytes).
std::vector<std::string> ValidStrings() {
  std::string ascii;
  for (int c = 0; c < 0x80; ++c) ascii.push_back(static_cast<char>(c));
  return {"",
          ascii,
          "quote \" backslash \\ slash /",
          "new\nline\r\ttab\b\f",
          std::string("nul \0 inside", 12),
          "\x01\x1f\x7f",
          "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80",    // é 日本 😀
          "\xE2\x80\xA8 \xE2\x80\xA9",                                // U+2028 U+2029
          "\xEF\xBF\xBF \xF4\x8F\xBF\xBF \xED\x9F\xBF \xEE\x80\x80",  // edges of the ranges
          "\\u0041 is not unescaped"};
}

TEST(JsonWriterTest, ValidStringsRoundTripExactly) {
  for (const std::string& s : ValidStrings()) {
    const std::string quoted = JsonQuote(s);
    const json parsed = json::parse(quoted);
    ASSERT_TRUE(parsed.is_string()) << quoted;
    EXPECT_EQ(parsed.get<std::string>(), s) << quoted;
    // As a key and as a value in an object.
    JsonWriter w;
    w.BeginObject().Key(s).String(s).EndObject();
    const json o = json::parse(w.Take());
    ASSERT_EQ(o.size(), 1u);
    EXPECT_EQ(o.begin().key(), s);
    EXPECT_EQ(o.begin().value().get<std::string>(), s);
  }
}

TEST(JsonWriterTest, EscapesControlCharactersAndQuotes) {
  EXPECT_EQ(JsonQuote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(JsonQuote("\n\r\t\b\f"), R"("\n\r\t\b\f")");
  EXPECT_EQ(JsonQuote(std::string("\0\x01\x1f", 3)), R"("\u0000\u0001\u001f")");
  EXPECT_EQ(JsonQuote("\x7f /"), "\"\x7f /\"");  // DEL and '/' need no escape
  for (int c = 0; c < 0x20; ++c) {
    const std::string q = JsonQuote(std::string(1, static_cast<char>(c)));
    for (char b : q) EXPECT_GE(static_cast<unsigned char>(b), 0x20) << c;
  }
}

TEST(JsonWriterTest, InvalidUtf8BecomesOneReplacementPerByte) {
  const struct {
    std::string in, out;
  } cases[] = {
      {"\x80", kReplacement},                     // a stray continuation byte
      {"a\xBFz", "a" + kReplacement + "z"},       //
      {"\xC3", kReplacement},                     // truncated 2-byte sequence
      {"\xE6\x97", kReplacement + kReplacement},  // truncated 3-byte sequence
      {"\xF0\x9F\x98", kReplacement + kReplacement + kReplacement},
      {"\xC0\xAF", kReplacement + kReplacement},        // overlong '/'
      {"\xC1\xBF", kReplacement + kReplacement},        // overlong
      {"\xE0\x80\xAF", std::string(3, 'x')},            // overlong (checked below)
      {"\xED\xA0\x80", std::string(3, 'x')},            // surrogate U+D800
      {"\xF4\x90\x80\x80", std::string(4, 'x')},        // U+110000
      {"\xF5\x80\x80\x80", std::string(4, 'x')},        // F5: never valid
      {"\xFF\xFE", kReplacement + kReplacement},        //
      {"ok\xC3\xA9\xC3", "ok\xC3\xA9" + kReplacement},  // valid, then truncated
  };
  for (const auto& c : cases) {
    std::string want = c.out;
    if (want.find('x') != std::string::npos) {
      want.clear();
      for (size_t i = 0; i < c.in.size(); ++i) want += kReplacement;
    }
    const std::string quoted = JsonQuote(c.in);
    EXPECT_EQ(quoted, "\"" + want + "\"");
    const json parsed = json::parse(quoted);  // throws on invalid UTF-8
    EXPECT_EQ(parsed.get<std::string>(), want);
  }
}

TEST(JsonWriterTest, Numbers) {
  JsonWriter w;
  w.BeginArray()
      .Int(0)
      .Int(-7)
      .Int(std::numeric_limits<int64_t>::max())
      .Int(std::numeric_limits<int64_t>::min())
      .Double(0.1)
      .Double(-0.0)
      .Double(1e300)
      .Double(5e-324)
      .Double(std::nan(""))
      .Double(std::numeric_limits<double>::infinity())
      .Double(2.0 / 3.0, 6)
      .Double(-std::numeric_limits<double>::infinity(), 6)
      .NumberText("-0.0")
      .NumberText("1.5e-07")
      .NumberText("01")
      .NumberText("1.")
      .NumberText("NaN")
      .NumberText("")
      .EndArray();
  const std::string text = w.Take();
  EXPECT_EQ(text,
            "[0,-7,9223372036854775807,-9223372036854775808,0.1,-0,1e+300,5e-324,null,null,"
            "0.666667,null,-0.0,1.5e-07,null,null,null,null]");
  const json j = json::parse(text);
  EXPECT_EQ(j[2].get<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(j[3].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(j[4].get<double>(), 0.1);
  EXPECT_EQ(j[7].get<double>(), 5e-324);
}

TEST(JsonWriterTest, CompactLayout) {
  JsonWriter w;
  w.BeginObject();
  w.Key("a").Int(1);
  w.Key("b").BeginArray().Bool(true).Null().BeginObject().EndObject().EndArray();
  w.Key("c").BeginArray().EndArray();
  w.EndObject();
  EXPECT_EQ(w.Take(), R"({"a":1,"b":[true,null,{}],"c":[]})");
  // Take() empties the writer: a new value may follow.
  w.String("x");
  EXPECT_EQ(w.Take(), R"("x")");
}

TEST(JsonWriterTest, IndentedLayoutWithOneLineContainers) {
  JsonWriter w({.indent = 2});
  w.BeginObject();
  w.Key("n").Int(1);
  w.Key("list").BeginArray();
  w.BeginObject(/*one_line=*/true).Key("x").Int(1).Key("y").BeginArray().Int(2).Int(3).EndArray();
  w.EndObject();
  w.BeginObject(/*one_line=*/true).EndObject();
  w.EndArray();
  w.Key("empty").BeginObject().EndObject();
  w.EndObject();
  EXPECT_EQ(w.Take(),
            "{\n"
            "  \"n\": 1,\n"
            "  \"list\": [\n"
            "    {\"x\": 1, \"y\": [2, 3]},\n"
            "    {}\n"
            "  ],\n"
            "  \"empty\": {}\n"
            "}");
}

}  // namespace
}  // namespace sluice
