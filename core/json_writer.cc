#include "sluice/core/json_writer.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace sluice {
namespace {

bool Continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629, table 3-7
// of the Unicode standard), or 0 if the byte there does not start one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  const size_t left = s.size() - i;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && Continuation(at(1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !Continuation(at(1)) || !Continuation(at(2))) return 0;
    if (c == 0xE0 && at(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && at(1) > 0x9F) return 0;  // a surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !Continuation(at(1)) || !Continuation(at(2)) || !Continuation(at(3))) {
      return 0;
    }
    if (c == 0xF0 && at(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && at(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // a continuation byte, C0, C1 or F5..FF
}

// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?  (RFC 8259, section 6)
bool IsJsonNumber(std::string_view t) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          *out += "\\u00";
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else if (const size_t n = Utf8Length(s, i); n > 0) {
          out->append(s.substr(i, n));
          i += n;
          continue;
        } else {
          *out += "\xEF\xBF\xBD";  // U+FFFD for this one byte
        }
    }
    ++i;
  }
  out->push_back('"');
}

std::string JsonQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  AppendJsonString(s, &out);
  return out;
}

JsonWriter::JsonWriter(JsonWriterOptions options) : options_(options) {}

void JsonWriter::NewLine(size_t depth) {
  out_.push_back('\n');
  out_.append(depth * static_cast<size_t>(options_.indent), ' ');
}

// The comma and line break (or space, on one line) before the next member
// or element of the innermost container.
void JsonWriter::Separate() {
  Level& l = levels_.back();
  if (!l.empty) out_.push_back(',');
  if (options_.indent > 0) {
    if (!l.one_line) {
      NewLine(levels_.size());
    } else if (!l.empty) {
      out_.push_back(' ');
    }
  }
  l.empty = false;
}

void JsonWriter::BeforeValue() {
  if (levels_.empty()) {
    assert(out_.empty() && "JsonWriter: a second top-level value");
    return;
  }
  if (levels_.back().object) {
    assert(after_key_ && "JsonWriter: a value in an object without its Key()");
    after_key_ = false;
    return;
  }
  Separate();
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  assert(!levels_.empty() && levels_.back().object && !after_key_ && "JsonWriter: misplaced Key()");
  Separate();
  AppendJsonString(key, &out_);
  out_ += options_.indent > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

void JsonWriter::Begin(char open, bool object, bool one_line) {
  BeforeValue();
  out_.push_back(open);
  const bool inside_one_line = !levels_.empty() && levels_.back().one_line;
  levels_.push_back({object, one_line || inside_one_line});
}

void JsonWriter::End(char close, bool object) {
  assert(!levels_.empty() && levels_.back().object == object && !after_key_ &&
         "JsonWriter: End does not match Begin");
  (void)object;
  const Level l = levels_.back();
  levels_.pop_back();
  if (options_.indent > 0 && !l.one_line && !l.empty) NewLine(levels_.size());
  out_.push_back(close);
}

JsonWriter& JsonWriter::BeginObject(bool one_line) {
  Begin('{', true, one_line);
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  End('}', true);
  return *this;
}
JsonWriter& JsonWriter::BeginArray(bool one_line) {
  Begin('[', false, one_line);
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  End(']', false);
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  BeforeValue();
  AppendJsonString(s, &out_);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  BeforeValue();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::Double(double v) {
  if (!std::isfinite(v)) return Null();
  BeforeValue();
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::Double(double v, int significant_digits) {
  if (!std::isfinite(v)) return Null();
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", significant_digits < 1 ? 1 : significant_digits, v);
  return NumberText(buf);
}

JsonWriter& JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::NumberText(std::string_view text) {
  if (!IsJsonNumber(text)) return Null();
  BeforeValue();
  out_.append(text);
  return *this;
}

std::string JsonWriter::Take() {
  assert(levels_.empty() && !after_key_ && "JsonWriter: Take() before the value is complete");
  std::string out = std::move(out_);
  out_.clear();
  return out;
}

}  // namespace sluice
