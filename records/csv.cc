#include "sluice/records/csv.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice {

Status CheckCsvDialect(const CsvDialect& d) {
  const char c = d.field_delim;
  if (c == '\n' || c == '\r' || c == '\0' || (c == '"' && d.use_quote_delim)) {
    return Status::InvalidArgument(
        "field_delim cannot be a line break, NUL or (with use_quote_delim) a quote");
  }
  return Status::OK();
}

bool SplitCsvRecord(std::string_view record, const CsvDialect& dialect,
                    std::vector<CsvField>* fields, std::string* scratch, CsvSyntaxError* error) {
  fields->clear();
  std::string& scratch_ = *scratch;
  scratch_.clear();
  scratch_.reserve(record.size());  // unescaped text is never longer: views stay valid
  const char delim = dialect.field_delim;
  const bool quoting = dialect.use_quote_delim;
  const char* r = record.data();
  const size_t n = record.size();
  uint32_t lines = 0;
  size_t i = 0;
  while (true) {
    const size_t column = fields->size() + 1;
    if (!quoting || i == n || r[i] != '"') {
      const void* d = std::memchr(r + i, delim, n - i);
      const size_t k = d ? static_cast<size_t>(static_cast<const char*>(d) - r) : n;
      const std::string_view text(r + i, k - i);
      if (quoting && text.find('"') != std::string_view::npos) {
        *error = {column, lines,
                  "a quote inside an unquoted field (quote the whole field, and double the "
                  "quotes inside it)"};
        return false;
      }
      fields->push_back({text, lines});
      if (d == nullptr) return true;
      i = k + 1;
      continue;
    }
    // A quoted field.
    const uint32_t field_lines = lines;
    const size_t start = i + 1;
    size_t j = start;
    size_t escaped_from = std::string::npos;  // where in scratch_ its text starts
    std::string_view text;
    while (true) {
      const void* q = std::memchr(r + j, '"', n - j);
      if (q == nullptr) {
        *error = {column, field_lines, "the quoted field has no closing quote"};
        return false;
      }
      const size_t k = static_cast<size_t>(static_cast<const char*>(q) - r);
      lines += static_cast<uint32_t>(std::count(r + j, r + k, '\n'));
      if (k + 1 < n && r[k + 1] == '"') {  // "" is one quote
        if (escaped_from == std::string::npos) {
          escaped_from = scratch_.size();
          scratch_.append(r + start, k + 1 - start);
        } else {
          scratch_.append(r + j, k + 1 - j);
        }
        j = k + 2;
        continue;
      }
      if (escaped_from == std::string::npos) {
        text = std::string_view(r + start, k - start);
      } else {
        scratch_.append(r + j, k - j);
        text = std::string_view(scratch_).substr(escaped_from);
      }
      i = k + 1;
      break;
    }
    fields->push_back({text, field_lines});
    if (i == n) return true;
    if (r[i] != delim) {
      *error = {column, lines,
                "a quoted field must end at the delimiter or the end of the record (a quote "
                "inside it is written as two)"};
      return false;
    }
    ++i;
  }
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseInt(std::string_view text, T* out) {
  text = Trim(text);
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out, 10);
  return ec == std::errc() && p == end && !text.empty();
}

template <typename T>
T StrTo(const char* s, char** end) {
  if constexpr (std::is_same_v<T, float>) {
    return std::strtof(s, end);
  } else {
    return std::strtod(s, end);
  }
}

template <typename T>
bool ParseFloat(std::string_view text, T* out) {
  text = Trim(text);
  if (text.empty()) return false;
  std::string_view body = text;
  bool negative = false;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  std::chars_format format = std::chars_format::general;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    format = std::chars_format::hex;
    body.remove_prefix(2);
    if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  }
  const char* end = body.data() + body.size();
  T value{};
  auto [p, ec] = std::from_chars(body.data(), end, value, format);
  if (p != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) return false;
  if (ec == std::errc::result_out_of_range) {
    // Overflow or underflow: strtod's inf or 0 (or subnormal).
    const std::string copy(text);
    char* stop = nullptr;
    value = StrTo<T>(copy.c_str(), &stop);
    *out = value;
    return true;
  }
  *out = negative ? -value : value;
  return true;
}

}  // namespace

bool ParseCsvNumber(std::string_view text, int32_t* out) { return ParseInt(text, out); }
bool ParseCsvNumber(std::string_view text, int64_t* out) { return ParseInt(text, out); }
bool ParseCsvNumber(std::string_view text, float* out) { return ParseFloat(text, out); }
bool ParseCsvNumber(std::string_view text, double* out) { return ParseFloat(text, out); }

}  // namespace sluice
