#include "sluice/pipeline/stats.h"

#include <cstdio>

namespace sluice {
namespace {
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\u%04x", c);
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

std::string IteratorStats::ToJson() const {
  std::string o = "{\n";
  auto kv = [&](const char* k, long long v, bool comma = true) {
    o += "  \"" + std::string(k) + "\": " + std::to_string(v) + (comma ? ",\n" : "\n");
  };
  kv("elapsed_ns", elapsed_ns);
  kv("elements", elements);
  kv("cpu_budget", cpu_budget);
  kv("ram_budget", ram_budget);
  kv("ram_used", ram_used);
  kv("ram_peak", ram_peak);
  kv("tuner_steps", tuner_steps);
  kv("cpu_wait_ns", cpu_wait_ns);
  o += "  \"stages\": [";
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageStats& s = stages[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"name\": " + Quote(s.name) + ", \"kind\": " + Quote(s.kind);
    auto f = [&](const char* k, long long v) {
      o += ", \"" + std::string(k) + "\": " + std::to_string(v);
    };
    f("elements", s.elements);
    f("bytes", s.bytes);
    f("busy_ns", s.busy_ns);
    f("wait_ns", s.wait_ns);
    f("input_wait_ns", s.input_wait_ns);
    f("room_wait_ns", s.room_wait_ns);
    f("input_hold_ns", s.input_hold_ns);
    f("lock_wait_ns", s.lock_wait_ns);
    f("reads_ahead", s.reads_ahead);
    f("reads_in_place", s.reads_in_place);
    f("read_wait_ns", s.read_wait_ns);
    f("parallelism", s.parallelism);
    f("buffer_depth", s.buffer_depth);
    f("buffer_capacity", s.buffer_capacity);
    f("buffered_bytes", s.buffered_bytes);
    f("errors_ignored", s.errors_ignored);
    o += std::string(", \"autotuned\": ") + (s.autotuned ? "true" : "false");
    o += ", \"tuner_reason\": " + Quote(s.tuner_reason);
    if (!s.errors.empty()) {
      o += ", \"errors\": [";
      for (size_t k = 0; k < s.errors.size(); ++k) o += (k ? ", " : "") + Quote(s.errors[k]);
      o += "]";
    }
    o += "}";
  }
  o += "\n  ]\n}\n";
  return o;
}

std::string IteratorStats::ToString() const {
  std::string o;
  char line[512];
  const double secs = static_cast<double>(elapsed_ns) / 1e9;
  std::snprintf(line, sizeof(line),
                "%lld elements in %.2f s; cpu budget %d; ram %lld / %lld bytes (peak %lld)\n",
                static_cast<long long>(elements), secs, cpu_budget,
                static_cast<long long>(ram_used), static_cast<long long>(ram_budget),
                static_cast<long long>(ram_peak));
  o += line;
  std::snprintf(line, sizeof(line), "%-20s %12s %10s %10s %6s %9s  %s\n", "stage", "elements",
                "busy_s", "wait_s", "par", "buffer", "autotune");
  o += line;
  for (const StageStats& s : stages) {
    std::snprintf(line, sizeof(line), "%-20s %12lld %10.3f %10.3f %6lld %4lld/%-4lld  %s\n",
                  s.name.c_str(), static_cast<long long>(s.elements),
                  static_cast<double>(s.busy_ns) / 1e9, static_cast<double>(s.wait_ns) / 1e9,
                  static_cast<long long>(s.parallelism), static_cast<long long>(s.buffer_depth),
                  static_cast<long long>(s.buffer_capacity),
                  s.autotuned ? s.tuner_reason.c_str() : "-");
    o += line;
    if (s.errors_ignored > 0) {
      std::snprintf(
          line, sizeof(line), "%-20s %lld errors skipped%s\n", "",
          static_cast<long long>(s.errors_ignored),
          s.errors_ignored > static_cast<int64_t>(s.errors.size()) ? ", the first:" : ":");
      o += line;
      for (const std::string& e : s.errors) o += std::string(21, ' ') + e + "\n";
    }
  }
  return o;
}

}  // namespace sluice
