// ConvertLock: a conversion's hold on its output prefix, so that two runs
// never write the same shards at once and their updates of the manifest
// (convert_manifest.h) never interleave.
//
// The locks are fcntl() byte-range locks on one hidden file beside the
// shards, ".<name>.lock" for PREFIX dir/<name> (never deleted: deleting a
// lock file races with the next run that opens it). The kernel drops them
// when the process ends, however it ends, and NFS carries them between
// hosts that share the folder:
//   byte 0       the manifest: held for the few milliseconds of reading,
//                changing and rewriting it (LockManifest waits for it)
//   byte 1       the conversion: shared by every run (task) of the same
//                options; exclusive to start a conversion with other ones
//   byte 2 + s   shard s: exclusive while a run writes it
// A lock that another process holds is FailedPrecondition at once, naming
// the process (its pid, on this host or one that shares the folder); the
// manifest's, which runs take in turn, after kManifestLockTimeout.
//
// fcntl locks belong to the process: one ConvertLock per prefix and
// process, used from one thread at a time (the manifest updater serializes
// its callers). Movable, not copyable; the destructor releases everything.
#ifndef SLUICE_TOOLS_CONVERT_LOCK_H_
#define SLUICE_TOOLS_CONVERT_LOCK_H_

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

#include "sluice/core/result.h"

namespace sluice::tools {

// How long LockManifest() waits for another run's update of the manifest.
inline constexpr std::chrono::seconds kManifestLockTimeout{10};

class ConvertLock {
 public:
  // Opens (creating) the lock file of `prefix`; takes no lock yet.
  static Result<ConvertLock> Open(const std::string& prefix);
  // ".<name>.lock" beside PREFIX.
  static std::string PathFor(const std::string& prefix);

  ConvertLock(ConvertLock&& other) noexcept;
  ConvertLock& operator=(ConvertLock&& other) noexcept;
  ConvertLock(const ConvertLock&) = delete;
  ConvertLock& operator=(const ConvertLock&) = delete;
  ~ConvertLock();

  // Byte 0, waiting for it up to kManifestLockTimeout (other runs hold it
  // for milliseconds): Unavailable naming the holder after that, so a
  // stopped or hung holder is an error, never a hang.
  Status LockManifest();
  void UnlockManifest();
  // UnlockManifest() when it goes out of scope, after LockManifest().
  struct ManifestUnlocker {
    ConvertLock& lock;
    ~ManifestUnlocker() { lock.UnlockManifest(); }
  };
  // Byte 1 shared: this run joins the conversion the manifest records.
  Status JoinConversion();
  // Byte 1 exclusive, to replace the conversion (no other run may be going
  // on), then shared again with JoinConversion().
  Status TakeConversion();
  // Bytes 2 + s of `shards` (sorted), exclusive.
  Status LockShards(std::span<const size_t> shards);

  const std::string& path() const { return path_; }

 private:
  ConvertLock(std::string path, std::string prefix, int fd);
  // Takes the lock, or FailedPrecondition naming its holder.
  Status Set(short type, off_t start, off_t length, std::string_view what);
  // Takes the lock if it is free: *held tells whether another process has it.
  Status Try(short type, off_t start, off_t length, bool* held);
  // FailedPrecondition naming the process that holds [start, start + length).
  Status HeldBy(short type, off_t start, off_t length, std::string_view what);

  std::string path_, prefix_;
  int fd_ = -1;
};

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_CONVERT_LOCK_H_
