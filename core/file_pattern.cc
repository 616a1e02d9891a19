#include "sluice/core/file_pattern.h"

#include <charconv>
#include <cstdint>
#include <optional>

namespace sluice {
namespace {

class Expander {
 public:
  Expander(std::string_view whole, size_t max) : whole_(whole), max_(max) {}

  // All names of `p` (a pattern: literals and {expressions}).
  Result<std::vector<std::string>> Pattern(std::string_view p) {
    std::vector<std::string> out{""};
    size_t start = 0, depth = 0, open = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      if (p[i] == '\\') {
        ++i;
        continue;
      }
      if (p[i] == '{') {
        if (depth++ == 0) {
          Append(&out, p.substr(start, i - start));
          open = i;
        }
      } else if (p[i] == '}' && depth > 0) {
        if (--depth == 0) {
          SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> alts,
                                  Expression(p.substr(open + 1, i - open - 1)));
          SLUICE_RETURN_IF_ERROR(Product(&out, alts));
          start = i + 1;
        }
      } else if (p[i] == '}') {
        return Unbalanced();
      }
    }
    if (depth != 0) return Unbalanced();
    Append(&out, p.substr(start));
    return out;
  }

 private:
  Status Unbalanced() const {
    return Status::InvalidArgument("unbalanced braces in the file pattern '" + std::string(whole_) +
                                   "'");
  }
  Status TooMany(uint64_t n) const {
    return Status::InvalidArgument("the file pattern '" + std::string(whole_) + "' expands to " +
                                   std::to_string(n) + " names, more than the limit of " +
                                   std::to_string(max_));
  }
  static void Append(std::vector<std::string>* out, std::string_view s) {
    if (s.empty()) return;
    for (std::string& o : *out) o.append(s);
  }
  Status Product(std::vector<std::string>* out, const std::vector<std::string>& alts) {
    const uint64_t n = static_cast<uint64_t>(out->size()) * alts.size();
    if (n > max_) return TooMany(n);
    std::vector<std::string> next;
    next.reserve(static_cast<size_t>(n));
    for (const std::string& o : *out) {
      for (const std::string& a : alts) next.push_back(o + a);
    }
    *out = std::move(next);
    return Status::OK();
  }

  static std::optional<int64_t> Int(std::string_view s) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || s.empty() || s.front() == '+') {
      return std::nullopt;
    }
    return v;
  }

  // "A..B" or "A..B..STEP" with integers: the range, or nullopt.
  Result<std::optional<std::vector<std::string>>> Range(std::string_view e) {
    const size_t dots = e.find("..");
    if (dots == std::string_view::npos) return std::optional<std::vector<std::string>>();
    const std::string_view a = e.substr(0, dots);
    std::string_view b = e.substr(dots + 2), step_s;
    if (const size_t d2 = b.find(".."); d2 != std::string_view::npos) {
      step_s = b.substr(d2 + 2);
      b = b.substr(0, d2);
      if (step_s.starts_with('-')) step_s.remove_prefix(1);
    }
    const std::optional<int64_t> lo = Int(a), hi = Int(b);
    std::optional<int64_t> step = step_s.empty() ? std::optional<int64_t>(1) : Int(step_s);
    if (!lo || !hi || !step || *step < 0) return std::optional<std::vector<std::string>>();
    if (*step == 0) step = 1;
    const auto padded = [](std::string_view s) {
      return s != "0" && s != "-0" && (s.starts_with('0') || s.starts_with("-0"));
    };
    const size_t width = padded(a) || padded(b) ? std::max(a.size(), b.size()) : 0;
    const uint64_t span = *lo < *hi ? static_cast<uint64_t>(*hi) - static_cast<uint64_t>(*lo)
                                    : static_cast<uint64_t>(*lo) - static_cast<uint64_t>(*hi);
    const uint64_t n = span / static_cast<uint64_t>(*step) + 1;
    if (n > max_) return TooMany(n);
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(n));
    for (uint64_t k = 0; k < n; ++k) {
      const int64_t v = *lo < *hi ? *lo + static_cast<int64_t>(k) * *step
                                  : *lo - static_cast<int64_t>(k) * *step;
      std::string s = std::to_string(v < 0 ? -v : v);
      const size_t w = width > 0 && v < 0 ? width - 1 : width;  // %0Nd counts the sign
      if (s.size() < w) s.insert(0, w - s.size(), '0');
      if (v < 0) s.insert(0, 1, '-');
      out.push_back(std::move(s));
    }
    return std::optional<std::vector<std::string>>(std::move(out));
  }

  // The inside of {...}: a range, a comma list, or (neither) itself in braces.
  Result<std::vector<std::string>> Expression(std::string_view e) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> range, Range(e));
    if (range) return std::move(*range);
    std::vector<std::string_view> items;
    size_t start = 0, depth = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i] == '\\') {
        ++i;
      } else if (e[i] == '{') {
        ++depth;
      } else if (e[i] == '}') {
        --depth;
      } else if (e[i] == ',' && depth == 0) {
        items.push_back(e.substr(start, i - start));
        start = i + 1;
      }
    }
    std::vector<std::string> out;
    if (items.empty()) {
      SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> inner, Pattern(e));
      for (std::string& s : inner) out.push_back("{" + s + "}");
      return out;
    }
    items.push_back(e.substr(start));
    for (std::string_view item : items) {
      SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> names, Pattern(item));
      if (out.size() + names.size() > max_) return TooMany(out.size() + names.size());
      for (std::string& s : names) out.push_back(std::move(s));
    }
    return out;
  }

  std::string_view whole_;
  size_t max_;
};

}  // namespace

Result<std::vector<std::string>> ExpandBraces(std::string_view pattern, size_t max_names) {
  return Expander(pattern, max_names).Pattern(pattern);
}

}  // namespace sluice
