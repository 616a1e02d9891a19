// JsonWriter: JSON text (RFC 8259) built value by value into a string. The
// library's one JSON writer: pipeline stats, Chrome traces, benchmark
// reports and `sluice cat --json` all write through it.
//
//   JsonWriter w({.indent = 2});
//   w.BeginObject();
//   w.Key("name").String(stage_name);  // any bytes: always valid JSON
//   w.Key("elements").Int(42);
//   w.EndObject();
//   std::string text = w.Take();
//
// Strings (keys and values): '"', '\' and the control characters U+0000 to
// U+001F are escaped (\" \\ \b \f \n \r \t, the others \u00XX); well-formed
// UTF-8 is copied as it is, so UTF-8 text round-trips exactly. Each byte
// that is not part of a well-formed UTF-8 sequence (RFC 3629: a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate
// U+D800..U+DFFF, a code point above U+10FFFF, bytes F5..FF) is written as
// U+FFFD, the replacement character: the output is always valid UTF-8.
// Numbers: integers exactly; doubles in the shortest text that reads back
// as the same double, or with `significant_digits`; NaN and infinities,
// which JSON cannot represent, as null.
// Layout: indent 0 (the default) writes compact text ({"a":1,"b":[1,2]});
// indent n writes each member and element on its own line, n spaces deeper
// per level, with ": " after keys. A container begun with one_line = true,
// and everything inside it, is written on one line (", " and ": ") in an
// indented writer.
//
// REQUIRES: the calls form one JSON value: Key() directly inside an object,
// once before each member's value; End* matching Begin*; Take() once the
// value is complete. A violation is a programming error (assert).
//
// Thread-safety: one thread at a time per JsonWriter; JsonQuote and
// AppendJsonString share no state.
#ifndef SLUICE_CORE_JSON_WRITER_H_
#define SLUICE_CORE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct JsonWriterOptions {
  int indent = 0;  // spaces per level; 0: compact
};

class JsonWriter {
 public:
  explicit JsonWriter(JsonWriterOptions options = {});

  JsonWriter& BeginObject(bool one_line = false);
  JsonWriter& EndObject();
  JsonWriter& BeginArray(bool one_line = false);
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view s);
  JsonWriter& Int(int64_t v);
  JsonWriter& Double(double v);
  JsonWriter& Double(double v, int significant_digits);  // printf's %.Ng
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  // A number formatted by the caller (a float32 printed as Python does);
  // null if `text` is not a JSON number.
  JsonWriter& NumberText(std::string_view text);

  // The text written; the writer is then empty, ready for a new value.
  std::string Take();

 private:
  struct Level {
    bool object;
    bool one_line;
    bool empty = true;
  };
  void Separate();
  void BeforeValue();
  void Begin(char open, bool object, bool one_line);
  void End(char close, bool object);
  void NewLine(size_t depth);

  JsonWriterOptions options_;
  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

// `s` as a JSON string, quotes included, escaped as above.
std::string JsonQuote(std::string_view s);
// Appends JsonQuote(s) to *out.
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace sluice

#endif  // SLUICE_CORE_JSON_WRITER_H_
