#include "wxh.h"

#include <charconv>

namespace sluice::tools {
namespace {

bool ParseSide(std::string_view part, int64_t* v) {
  auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), *v);
  return ec == std::errc() && end == part.data() + part.size() && *v >= 1 && *v <= kMaxWxHSide;
}

}  // namespace

bool ParseWxH(std::string_view s, int64_t* width, int64_t* height) {
  const size_t x = s.find('x');
  if (x == std::string_view::npos) return false;
  int64_t w = 0, h = 0;
  if (!ParseSide(s.substr(0, x), &w) || !ParseSide(s.substr(x + 1), &h)) return false;
  *width = w;
  *height = h;
  return true;
}

}  // namespace sluice::tools
