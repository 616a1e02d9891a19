// A small JSON reader for the golden files under tests/data/tf: enough for
// their objects, arrays, strings, numbers, booleans and null. Numbers keep
// their text so that int64 values such as -2^63 are read exactly. Objects
// keep their key order. Test-only; not hardened against hostile input.
#ifndef SLUICE_TESTS_RECORDS_INTERNAL_JSON_H_
#define SLUICE_TESTS_RECORDS_INTERNAL_JSON_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::testing {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  // Throws std::runtime_error on malformed text (tests only).
  static Json Parse(std::string_view text) {
    size_t pos = 0;
    Json j = ParseValue(text, pos);
    SkipSpace(text, pos);
    if (pos != text.size()) throw std::runtime_error("json: trailing characters");
    return j;
  }

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool boolean() const { return bool_; }
  // The string value, or a number's text.
  const std::string& str() const { return text_; }
  int64_t int64() const { return std::strtoll(text_.c_str(), nullptr, 10); }
  const std::vector<Json>& array() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& object() const { return members_; }
  size_t size() const { return type_ == Type::kArray ? items_.size() : members_.size(); }
  const Json& operator[](size_t i) const { return items_.at(i); }
  // The member `key`; throws if missing.
  const Json& operator[](std::string_view key) const {
    for (const auto& [k, v] : members_) {
      if (k == key) return v;
    }
    throw std::runtime_error("json: no member " + std::string(key));
  }
  bool has(std::string_view key) const {
    for (const auto& m : members_) {
      if (m.first == key) return true;
    }
    return false;
  }

 private:
  static void SkipSpace(std::string_view t, size_t& pos) {
    while (pos < t.size() &&
           (t[pos] == ' ' || t[pos] == '\n' || t[pos] == '\r' || t[pos] == '\t')) {
      ++pos;
    }
  }

  static void Expect(std::string_view t, size_t& pos, std::string_view word) {
    if (t.substr(pos, word.size()) != word) throw std::runtime_error("json: bad literal");
    pos += word.size();
  }

  static std::string ParseString(std::string_view t, size_t& pos) {
    std::string out;
    ++pos;  // opening quote
    while (true) {
      if (pos >= t.size()) throw std::runtime_error("json: unterminated string");
      char c = t[pos++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos >= t.size()) throw std::runtime_error("json: bad escape");
      c = t[pos++];
      switch (c) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'u': {
          // Basic Multilingual Plane only; enough for the golden files.
          const unsigned cp = std::stoul(std::string(t.substr(pos, 4)), nullptr, 16);
          pos += 4;
          if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
          } else {
            out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
          }
          break;
        }
        default: out.push_back(c); break;  // \" \\ \/
      }
    }
  }

  static Json ParseValue(std::string_view t, size_t& pos) {
    SkipSpace(t, pos);
    if (pos >= t.size()) throw std::runtime_error("json: unexpected end");
    Json j;
    const char c = t[pos];
    if (c == '{') {
      j.type_ = Type::kObject;
      ++pos;
      SkipSpace(t, pos);
      if (t[pos] == '}') {
        ++pos;
        return j;
      }
      while (true) {
        SkipSpace(t, pos);
        std::string key = ParseString(t, pos);
        SkipSpace(t, pos);
        Expect(t, pos, ":");
        j.members_.emplace_back(std::move(key), ParseValue(t, pos));
        SkipSpace(t, pos);
        if (t[pos] == ',') {
          ++pos;
          continue;
        }
        Expect(t, pos, "}");
        return j;
      }
    }
    if (c == '[') {
      j.type_ = Type::kArray;
      ++pos;
      SkipSpace(t, pos);
      if (t[pos] == ']') {
        ++pos;
        return j;
      }
      while (true) {
        j.items_.push_back(ParseValue(t, pos));
        SkipSpace(t, pos);
        if (t[pos] == ',') {
          ++pos;
          continue;
        }
        Expect(t, pos, "]");
        return j;
      }
    }
    if (c == '"') {
      j.type_ = Type::kString;
      j.text_ = ParseString(t, pos);
      return j;
    }
    if (c == 't') {
      Expect(t, pos, "true");
      j.type_ = Type::kBool;
      j.bool_ = true;
      return j;
    }
    if (c == 'f') {
      Expect(t, pos, "false");
      j.type_ = Type::kBool;
      return j;
    }
    if (c == 'n') {
      Expect(t, pos, "null");
      return j;
    }
    j.type_ = Type::kNumber;
    const size_t start = pos;
    while (pos < t.size() &&
           std::string_view("+-0123456789.eE").find(t[pos]) != std::string_view::npos) {
      ++pos;
    }
    if (pos == start) throw std::runtime_error("json: unexpected character");
    j.text_ = std::string(t.substr(start, pos - start));
    return j;
  }

  Type type_ = Type::kNull;
  bool bool_ = false;
  std::string text_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_RECORDS_INTERNAL_JSON_H_
