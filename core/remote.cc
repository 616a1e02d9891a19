// The process-wide RemoteOptions and the RemoteStats counters (core/remote.h).
#include "sluice/core/remote.h"

#include <mutex>

#include "sluice/core/internal/remote_counters.h"
#include "sluice/core/internal/remote_filesystems.h"

namespace sluice {

namespace {

struct OptionsHolder {
  std::mutex mu;
  RemoteOptions options;
};

OptionsHolder& TheOptions() {
  static OptionsHolder* holder = new OptionsHolder;  // never destroyed: used at exit
  return *holder;
}

}  // namespace

namespace internal {

RemoteCounters& TheRemoteCounters() {
  static RemoteCounters* counters = new RemoteCounters;
  return *counters;
}

}  // namespace internal

Status SetRemoteOptions(const RemoteOptions& o) {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("remote options: " + what);
  };
  if (o.request_bytes < (size_t{64} << 10) || o.request_bytes > (size_t{1} << 30)) {
    return bad("request_bytes must be between 64 KiB and 1 GiB, not " +
               std::to_string(o.request_bytes));
  }
  if (o.read_ahead < 0 || o.read_ahead > 1024) {
    return bad("read_ahead must be 0..1024, not " + std::to_string(o.read_ahead));
  }
  if (o.max_requests_per_host < 1 || o.max_requests_per_host > 4096) {
    return bad("max_requests_per_host must be 1..4096, not " +
               std::to_string(o.max_requests_per_host));
  }
  if (o.max_retries < 0 || o.max_retries > 100) {
    return bad("max_retries must be 0..100, not " + std::to_string(o.max_retries));
  }
  if (!(o.retry_base_delay_s >= 0) || !(o.retry_max_delay_s >= o.retry_base_delay_s)) {
    return bad("retry delays must satisfy 0 <= retry_base_delay_s <= retry_max_delay_s");
  }
  if (!(o.connect_timeout_s > 0) || !(o.request_timeout_s > 0)) {
    return bad("timeouts must be positive");
  }
  {
    OptionsHolder& h = TheOptions();
    std::lock_guard<std::mutex> lock(h.mu);
    h.options = o;
  }
  internal::DropRemoteFileSystems();
  return Status::OK();
}

RemoteOptions GetRemoteOptions() {
  OptionsHolder& h = TheOptions();
  std::lock_guard<std::mutex> lock(h.mu);
  return h.options;
}

RemoteStats GetRemoteStats() {
  const internal::RemoteCounters& c = internal::TheRemoteCounters();
  RemoteStats s;
  s.requests = c.requests.load(std::memory_order_relaxed);
  s.bytes_read = c.bytes_read.load(std::memory_order_relaxed);
  s.retries = c.retries.load(std::memory_order_relaxed);
  s.throttled = c.throttled.load(std::memory_order_relaxed);
  s.timeouts = c.timeouts.load(std::memory_order_relaxed);
  s.errors = c.errors.load(std::memory_order_relaxed);
  s.files_opened = c.files_opened.load(std::memory_order_relaxed);
  return s;
}

void ResetRemoteStats() {
  internal::RemoteCounters& c = internal::TheRemoteCounters();
  for (auto* a : {&c.requests, &c.bytes_read, &c.retries, &c.throttled, &c.timeouts, &c.errors,
                  &c.files_opened}) {
    a->store(0, std::memory_order_relaxed);
  }
}

std::string RemoteStatsString(const RemoteStats& s) {
  return "requests=" + std::to_string(s.requests) + " bytes_read=" + std::to_string(s.bytes_read) +
         " retries=" + std::to_string(s.retries) + " throttled=" + std::to_string(s.throttled) +
         " timeouts=" + std::to_string(s.timeouts) + " errors=" + std::to_string(s.errors) +
         " files_opened=" + std::to_string(s.files_opened);
}

}  // namespace sluice
