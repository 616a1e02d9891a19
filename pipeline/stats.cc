#include "sluice/pipeline/stats.h"

#include <cstdio>

namespace sluice {

void IteratorStats::WriteJson(JsonWriter& w) const {
  w.BeginObject();
  w.Key("elapsed_ns").Int(elapsed_ns);
  w.Key("elements").Int(elements);
  w.Key("cpu_budget").Int(cpu_budget);
  w.Key("ram_budget").Int(ram_budget);
  w.Key("ram_used").Int(ram_used);
  w.Key("ram_peak").Int(ram_peak);
  w.Key("tuner_steps").Int(tuner_steps);
  w.Key("cpu_wait_ns").Int(cpu_wait_ns);
  w.Key("stages").BeginArray();
  for (const StageStats& s : stages) {
    w.BeginObject(/*one_line=*/true);
    w.Key("name").String(s.name);
    w.Key("kind").String(s.kind);
    w.Key("elements").Int(s.elements);
    w.Key("bytes").Int(s.bytes);
    w.Key("busy_ns").Int(s.busy_ns);
    w.Key("wait_ns").Int(s.wait_ns);
    w.Key("input_wait_ns").Int(s.input_wait_ns);
    w.Key("room_wait_ns").Int(s.room_wait_ns);
    w.Key("input_hold_ns").Int(s.input_hold_ns);
    w.Key("lock_wait_ns").Int(s.lock_wait_ns);
    w.Key("reads_ahead").Int(s.reads_ahead);
    w.Key("reads_in_place").Int(s.reads_in_place);
    w.Key("read_wait_ns").Int(s.read_wait_ns);
    w.Key("parallelism").Int(s.parallelism);
    w.Key("buffer_depth").Int(s.buffer_depth);
    w.Key("buffer_capacity").Int(s.buffer_capacity);
    w.Key("buffered_bytes").Int(s.buffered_bytes);
    w.Key("errors_ignored").Int(s.errors_ignored);
    w.Key("autotuned").Bool(s.autotuned);
    w.Key("tuner_reason").String(s.tuner_reason);
    if (s.tokens > 0) {
      w.Key("tokens").Int(s.tokens);
      w.Key("padding_tokens").Int(s.padding_tokens);
      w.Key("padding_fraction").Double(s.padding_fraction());
    }
    if (!s.errors.empty()) {
      w.Key("errors").BeginArray();
      for (const std::string& e : s.errors) w.String(e);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  if (remote.files_opened > 0) {
    w.Key("object_stores").BeginObject(/*one_line=*/true);
    w.Key("files_opened").Int(remote.files_opened);
    w.Key("requests").Int(remote.requests);
    w.Key("bytes_read").Int(remote.bytes_read);
    w.Key("retries").Int(remote.retries);
    w.Key("throttled").Int(remote.throttled);
    w.Key("timeouts").Int(remote.timeouts);
    w.Key("errors").Int(remote.errors);
    w.Key("cache_hits").Int(static_cast<int64_t>(remote_cache.hits));
    w.Key("cache_misses").Int(static_cast<int64_t>(remote_cache.misses));
    w.Key("cache_bytes_read").Int(static_cast<int64_t>(remote_cache.bytes_read_from_cache));
    w.EndObject();
  }
  w.EndObject();
}

std::string IteratorStats::ToJson() const {
  JsonWriter w({.indent = 2});
  WriteJson(w);
  return w.Take() + "\n";
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
    if (s.tokens > 0) {
      std::snprintf(line, sizeof(line), "%-20s %.1f%% padding of %lld tokens\n", "",
                    100.0 * s.padding_fraction(), static_cast<long long>(s.tokens));
      o += line;
    }
    if (s.errors_ignored > 0) {
      std::snprintf(
          line, sizeof(line), "%-20s %lld errors skipped%s\n", "",
          static_cast<long long>(s.errors_ignored),
          s.errors_ignored > static_cast<int64_t>(s.errors.size()) ? ", the first:" : ":");
      o += line;
      for (const std::string& e : s.errors) o += std::string(21, ' ') + e + "\n";
    }
  }
  if (remote.files_opened > 0) {
    std::snprintf(
        line, sizeof(line),
        "object stores: %lld files, %lld requests, %.1f MB; %lld retries (%lld "
        "throttled, %lld timeouts), %lld errors; cache %llu hits, %llu misses\n",
        static_cast<long long>(remote.files_opened), static_cast<long long>(remote.requests),
        static_cast<double>(remote.bytes_read) / 1e6, static_cast<long long>(remote.retries),
        static_cast<long long>(remote.throttled), static_cast<long long>(remote.timeouts),
        static_cast<long long>(remote.errors), static_cast<unsigned long long>(remote_cache.hits),
        static_cast<unsigned long long>(remote_cache.misses));
    o += line;
  }
  return o;
}

}  // namespace sluice
