// The local cache of remote shards: objects read from an object store are
// kept whole on a local disk under a byte budget, so that a second epoch
// reads them from disk (as LitData's and Mosaic Streaming's caches do).
//
//   SetRemoteCache({.dir = "/nvme/sluice-cache", .max_bytes = 200e9});
//
// or, with nothing in the code, the environment when the first remote file
// is opened: SLUICE_REMOTE_CACHE_DIR and SLUICE_REMOTE_CACHE_BYTES ("200G",
// "512M", or bytes).
//
// How it fills (RemoteCacheOptions::fill):
//   kWhileReading  (default) a file read from its start to its end in order
//                  (every sequential reader: TFRecord, text, CSV, tar) is
//                  written to the cache as its bytes arrive, and published
//                  when the last byte was read: nothing is read twice and
//                  the first record does not wait for the whole object. A
//                  file read out of order (random access) is not cached.
//   kOnOpen        the whole object is downloaded when opened, then read
//                  from disk: random access (global_shuffle over indexed
//                  shards) is cached too, at the cost of the wait.
// A cached copy is used when its object still has the size and the
// modification time it had when cached; otherwise it is fetched again.
// (S3 gives that time to the second: an object rewritten with the same size
// within the second it was cached in is not noticed.)
// Whole files are evicted, least recently used first, to keep the cache
// under max_bytes; an object larger than the budget is never cached. Cache
// files are published atomically (OutputFile), so processes (ranks on one
// machine) may share one folder; an error of the cache (a full disk) never
// fails a read: the read goes on from the store and the error is counted.
//
// Thread-safety: all functions are thread-safe.
#ifndef SLUICE_CORE_REMOTE_CACHE_H_
#define SLUICE_CORE_REMOTE_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/core/result.h"

namespace sluice {

struct RemoteCacheOptions {
  enum class Fill { kWhileReading, kOnOpen };
  std::string dir;         // empty: no cache
  uint64_t max_bytes = 0;  // REQUIRES: > 0 when dir is set
  Fill fill = Fill::kWhileReading;
};

// Sets (or, with an empty dir, turns off) the process's cache. Makes the
// folder. InvalidArgument for max_bytes == 0 with a dir.
Status SetRemoteCache(const RemoteCacheOptions& options);
// The cache in effect (the environment's, if SetRemoteCache was not called).
RemoteCacheOptions GetRemoteCache();

struct RemoteCacheStats {
  uint64_t hits = 0;        // opens served from the cache
  uint64_t misses = 0;      // opens that went to the store
  uint64_t filled = 0;      // files published into the cache
  uint64_t evicted = 0;     // files evicted for the budget
  uint64_t not_cached = 0;  // read out of order, or larger than the budget
  uint64_t errors = 0;      // cache writes that failed (the read went on)
  uint64_t bytes_read_from_cache = 0;
};
RemoteCacheStats GetRemoteCacheStats();

// Parses "200G", "512M", "64K", "1T" or a plain number of bytes.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace sluice

#endif  // SLUICE_CORE_REMOTE_CACHE_H_
