// sluice.io's remote settings and counters (core/remote.h):
// set_remote_options, remote_options, remote_stats, reset_remote_stats.
#include <nanobind/stl/map.h>

#include <map>

#include "sluice/core/filesystem.h"
#include "sluice/core/remote.h"
#include "sluice_py.h"

namespace sluice::python {

namespace {

std::map<std::string, double> OptionsDict(const RemoteOptions& o) {
  return {{"request_bytes", static_cast<double>(o.request_bytes)},
          {"read_ahead", o.read_ahead},
          {"max_requests_per_host", o.max_requests_per_host},
          {"max_retries", o.max_retries},
          {"retry_base_delay_s", o.retry_base_delay_s},
          {"retry_max_delay_s", o.retry_max_delay_s},
          {"connect_timeout_s", o.connect_timeout_s},
          {"request_timeout_s", o.request_timeout_s}};
}

}  // namespace

void RegisterRemote(nb::module_& m) {
  nb::module_ r = m.def_submodule("remote_ops", "sluice.io's remote settings (C++ half)");
  r.def(
      "set_remote_options",
      [](std::optional<int64_t> request_bytes, std::optional<int> read_ahead,
         std::optional<int> max_requests_per_host, std::optional<int> max_retries,
         std::optional<double> retry_base_delay_s, std::optional<double> retry_max_delay_s,
         std::optional<double> connect_timeout_s, std::optional<double> request_timeout_s) {
        RemoteOptions o = GetRemoteOptions();
        if (request_bytes) {
          if (*request_bytes < 0) Check(Status::InvalidArgument("request_bytes is negative"));
          o.request_bytes = static_cast<size_t>(*request_bytes);
        }
        if (read_ahead) o.read_ahead = *read_ahead;
        if (max_requests_per_host) o.max_requests_per_host = *max_requests_per_host;
        if (max_retries) o.max_retries = *max_retries;
        if (retry_base_delay_s) o.retry_base_delay_s = *retry_base_delay_s;
        if (retry_max_delay_s) o.retry_max_delay_s = *retry_max_delay_s;
        if (connect_timeout_s) o.connect_timeout_s = *connect_timeout_s;
        if (request_timeout_s) o.request_timeout_s = *request_timeout_s;
        Check(SetRemoteOptions(o));
      },
      nb::arg("request_bytes") = nb::none(), nb::arg("read_ahead") = nb::none(),
      nb::arg("max_requests_per_host") = nb::none(), nb::arg("max_retries") = nb::none(),
      nb::arg("retry_base_delay_s") = nb::none(), nb::arg("retry_max_delay_s") = nb::none(),
      nb::arg("connect_timeout_s") = nb::none(), nb::arg("request_timeout_s") = nb::none());
  r.def("reset_remote_options", [] { Check(SetRemoteOptions(RemoteOptions{})); });
  r.def("remote_options", [] { return OptionsDict(GetRemoteOptions()); });
  r.def("remote_stats", [] {
    const RemoteStats s = GetRemoteStats();
    return std::map<std::string, int64_t>{
        {"requests", s.requests},        {"bytes_read", s.bytes_read}, {"retries", s.retries},
        {"throttled", s.throttled},      {"timeouts", s.timeouts},     {"errors", s.errors},
        {"files_opened", s.files_opened}};
  });
  r.def("reset_remote_stats", [] { ResetRemoteStats(); });
  r.def("remote_filesystems_available", [] { return RemoteFileSystemsAvailable(); });
}

}  // namespace sluice::python
