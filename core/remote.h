// Remote reads: the settings and counters of the object-store file systems
// (s3://, gs://, az://; core/filesystem.h, docs/objstore.md).
//
//   RemoteOptions    how objects are read: request size, read-ahead depth,
//                    requests in flight per host, retries and their
//                    backoff, connect and request timeouts.
//   RemoteStats      what the stores did since the process started:
//                    requests, bytes, retries (throttling apart), timeouts.
//
// The options are process-wide. SetRemoteOptions() applies to files opened
// and file systems made after it: it drops the shared clients, so the next
// FileSystemFor() of an object-store URI makes new ones with the new
// timeouts (files already open keep the clients and settings they had).
// In a build without Arrow C++ both exist and do nothing.
//
// Thread-safety: every function here may be called from any thread.
#ifndef SLUICE_CORE_REMOTE_H_
#define SLUICE_CORE_REMOTE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "sluice/core/status.h"

namespace sluice {

struct RemoteOptions {
  // Bytes asked of the store in one ranged GET. Large enough that the
  // first-byte latency of a real store (tens of ms) is a small part of each
  // request, small enough that a few of them per open file stay cheap in
  // memory (docs/objstore.md, "Request size and read-ahead").
  size_t request_bytes = size_t{8} << 20;
  // Requests kept in flight ahead of a reader that reads a file in order
  // (from its start or from where its last read ended). 0: no read-ahead,
  // one request at a time. Memory per open file is about
  // (read_ahead + 1) * request_bytes.
  int read_ahead = 4;
  // Requests in flight at once to one host (one file system: a scheme and
  // endpoint), over all files; read-ahead waits for a free slot.
  int max_requests_per_host = 64;
  // Attempts after the first, for throttling (HTTP 503 SlowDown, 429) and
  // transient errors (connection reset or refused, 500, a request that
  // timed out). Exponential backoff with full jitter from
  // retry_base_delay_s, at most retry_max_delay_s a wait.
  int max_retries = 6;
  double retry_base_delay_s = 0.05;
  double retry_max_delay_s = 5.0;
  // Seconds to open a TCP connection.
  double connect_timeout_s = 5.0;
  // Seconds a request may go without an answer (no byte received) before
  // it fails as a timeout (and is retried as a transient error). A store
  // that stops answering makes a read fail within about
  // (max_retries + 1) * (request_timeout_s + connect_timeout_s + retry_max_delay_s).
  double request_timeout_s = 20.0;
};

// Replaces the process-wide options (see the top of this file).
// InvalidArgument, leaving them unchanged, for a value out of range
// (request_bytes under 64 KiB or over 1 GiB, negative counts or times).
Status SetRemoteOptions(const RemoteOptions& options);
RemoteOptions GetRemoteOptions();

struct RemoteStats {
  int64_t requests = 0;    // ranged reads sent (retries included)
  int64_t bytes_read = 0;  // bytes those reads returned
  int64_t retries = 0;     // attempts after a failed one, all operations
  int64_t throttled = 0;   // of those, after the store said slow down (503, 429)
  int64_t timeouts = 0;    // requests that got no answer within request_timeout_s
  int64_t errors = 0;      // operations that failed after their retries
  int64_t files_opened = 0;
};

// Totals since the process started (or the last ResetRemoteStats()).
RemoteStats GetRemoteStats();
void ResetRemoteStats();
// "requests=12 bytes_read=... retries=0 ..." for logs and stats printouts.
std::string RemoteStatsString(const RemoteStats& stats);

}  // namespace sluice

#endif  // SLUICE_CORE_REMOTE_H_
