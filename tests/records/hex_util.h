// Hex strings for golden files' bytes (test-only).
#ifndef SLUICE_TESTS_RECORDS_HEX_UTIL_H_
#define SLUICE_TESTS_RECORDS_HEX_UTIL_H_

#include <string>
#include <string_view>

namespace sluice::testing {

inline std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

inline std::string Unhex(std::string_view hex) {
  auto v = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(v(hex[i]) << 4 | v(hex[i + 1]));
  }
  return out;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_RECORDS_HEX_UTIL_H_
