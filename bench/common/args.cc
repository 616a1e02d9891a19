#include "common/args.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <system_error>
#include <utility>

namespace sluice::bench {
namespace {

// `s` as a T, whole, or false.
template <typename T>
bool ParseWhole(const std::string& s, T* out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

bool InRange(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

std::string RangeText(double lo, double hi) {
  if (lo == -kUnbounded && hi == kUnbounded) return "";
  char text[96];
  if (hi == kUnbounded) {
    std::snprintf(text, sizeof(text), " >= %.15g", lo);
  } else if (lo == -kUnbounded) {
    std::snprintf(text, sizeof(text), " <= %.15g", hi);
  } else {
    std::snprintf(text, sizeof(text), " in %.15g..%.15g", lo, hi);
  }
  return text;
}

}  // namespace

CommandLine::CommandLine(std::string program, std::string synopsis)
    : program_(std::move(program)), synopsis_(std::move(synopsis)) {}

CommandLine& CommandLine::Push(Flag flag) {
  flags_.push_back(std::move(flag));
  return *this;
}

CommandLine& CommandLine::Add(std::string flag, std::string* value) {
  return Push({std::move(flag), value, 0, 0});
}
CommandLine& CommandLine::Add(std::string flag, int* value, double lo, double hi) {
  return Push({std::move(flag), value, lo, hi});
}
CommandLine& CommandLine::Add(std::string flag, int64_t* value, double lo, double hi) {
  return Push({std::move(flag), value, lo, hi});
}
CommandLine& CommandLine::Add(std::string flag, uint64_t* value, double lo, double hi) {
  return Push({std::move(flag), value, lo, hi});
}
CommandLine& CommandLine::Add(std::string flag, double* value, double lo, double hi) {
  return Push({std::move(flag), value, lo, hi});
}
CommandLine& CommandLine::Add(std::string flag, std::vector<int>* value, double lo, double hi) {
  return Push({std::move(flag), value, lo, hi});
}
CommandLine& CommandLine::Switch(std::string flag, bool* value) {
  return Push({std::move(flag), value, 0, 0});
}

const CommandLine::Flag* CommandLine::Find(const std::string& name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void CommandLine::Set(const Flag& f, const std::string& value) const {
  const std::string range = RangeText(f.lo, f.hi);
  auto number = [&](auto* out) {
    if (!ParseWhole(value, out) || !InRange(static_cast<double>(*out), f.lo, f.hi)) {
      UsageError(f.name + ": expected a number" + range + ", got '" + value + "'");
    }
  };
  if (auto* s = std::get_if<std::string*>(&f.value)) {
    **s = value;
  } else if (auto* list = std::get_if<std::vector<int>*>(&f.value)) {
    std::vector<int> items;
    std::stringstream ss(value);
    for (std::string item; std::getline(ss, item, ',');) {
      int n = 0;
      if (!ParseWhole(item, &n) || !InRange(n, f.lo, f.hi)) {
        UsageError(f.name + ": expected comma-separated integers" + range + ", got '" + value +
                   "'");
      }
      items.push_back(n);
    }
    if (items.empty() || value.back() == ',') {
      UsageError(f.name + ": expected comma-separated integers" + range + ", got '" + value + "'");
    }
    **list = std::move(items);
  } else {
    std::visit(
        [&](auto* out) {
          using T = std::remove_pointer_t<decltype(out)>;
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) number(out);
        },
        f.value);
  }
}

void CommandLine::Parse(int argc, char** argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(Usage().c_str(), stdout);
      std::exit(0);
    }
  }
  std::string names;
  for (const Flag& f : flags_) names += (names.empty() ? "" : " ") + f.name;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with("-")) UsageError("unexpected argument '" + arg + "'");
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Flag* f = Find(name);
    if (f == nullptr) UsageError("unknown flag " + name + " (flags: " + names + ")");
    if (bool* const* on = std::get_if<bool*>(&f->value)) {
      if (eq != std::string::npos) UsageError(name + " takes no value, got '" + arg + "'");
      **on = true;
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc) UsageError("missing value after " + name);
      value = argv[++i];
    }
    Set(*f, value);
  }
}

std::string CommandLine::Usage() const {
  std::string usage = "usage: " + program_;
  for (const Flag& f : flags_) {
    usage += " [" + f.name + (std::holds_alternative<bool*>(f.value) ? "]" : " VALUE]");
  }
  usage += "\n";
  if (!synopsis_.empty()) usage += "  " + program_ + " " + synopsis_ + "\n";
  return usage;
}

void CommandLine::UsageError(const std::string& message) const {
  std::fprintf(stderr, "%s: %s\n%s", program_.c_str(), message.c_str(), Usage().c_str());
  std::exit(2);
}

void CommandLine::Die(const std::string& message) const {
  std::fprintf(stderr, "%s: %s\n", program_.c_str(), message.c_str());
  std::exit(1);
}

}  // namespace sluice::bench
