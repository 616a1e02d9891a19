#include "convert_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "sluice/core/filesystem.h"

namespace sluice::tools {
namespace {

// The lock request for bytes [start, start + length) of the file.
struct flock Range(short type, off_t start, off_t length) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = length;
  return fl;
}

}  // namespace

std::string ConvertLock::PathFor(const std::string& prefix) {
  if (IsRemotePath(prefix)) {
    // An object store has no locks: runs converting into the same URI on
    // this machine share a lock file under the temporary folder instead.
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/sluice-convert-locks";
    (void)CreateDirs(dir);
    std::string name = prefix;
    for (char& c : name) {
      if (c == '/' || c == ':') c = '_';
    }
    return dir + "/" + name + ".lock";
  }
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  return dir + "." + name + ".lock";
}

Result<ConvertLock> ConvertLock::Open(const std::string& prefix) {
  const std::string path = PathFor(prefix);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    return Status::FailedPrecondition(
        fmt::format("cannot open the lock file {}: {}", path, std::strerror(errno)));
  }
  return ConvertLock(path, prefix, fd);
}

ConvertLock::ConvertLock(std::string path, std::string prefix, int fd)
    : path_(std::move(path)), prefix_(std::move(prefix)), fd_(fd) {}

ConvertLock::ConvertLock(ConvertLock&& other) noexcept
    : path_(std::move(other.path_)), prefix_(std::move(other.prefix_)), fd_(other.fd_) {
  other.fd_ = -1;
}

ConvertLock& ConvertLock::operator=(ConvertLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    prefix_ = std::move(other.prefix_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

ConvertLock::~ConvertLock() {
  if (fd_ >= 0) ::close(fd_);  // releases every lock of this process on the file
}

Status ConvertLock::Set(short type, off_t start, off_t length, std::string_view what) {
  bool held = false;
  SLUICE_RETURN_IF_ERROR(Try(type, start, length, &held));
  return held ? HeldBy(type, start, length, what) : Status::OK();
}

Status ConvertLock::Try(short type, off_t start, off_t length, bool* held) {
  struct flock fl = Range(type, start, length);
  *held = false;
  if (::fcntl(fd_, F_SETLK, &fl) == 0) return Status::OK();
  const int err = errno;
  if (err == EACCES || err == EAGAIN) {
    *held = true;
    return Status::OK();
  }
  return Status::FailedPrecondition(fmt::format("cannot lock {}: {}", path_, std::strerror(err)));
}

Status ConvertLock::HeldBy(short type, off_t start, off_t length, std::string_view what) {
  struct flock holder = Range(type, start, length);
  std::string who = "another process", held(what);
  if (::fcntl(fd_, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK) {
    who = fmt::format("process {}", holder.l_pid);
    // What the holder has, in the layout's terms.
    const off_t first = std::max<off_t>(holder.l_start, start);
    const off_t end = holder.l_len == 0
                          ? start + length
                          : std::min<off_t>(holder.l_start + holder.l_len, start + length);
    if (first >= 2 && end - first == 1) {
      held = fmt::format("shard {}", first - 2);
    } else if (first >= 2 && end > first) {
      held = fmt::format("shards {}-{}", first - 2, end - 3);
    }
  }
  return Status::FailedPrecondition(fmt::format(
      "{} is being written by another `sluice convert` ({}, which holds {} for {}); wait for it "
      "to finish or stop it",
      prefix_, who, path_, held));
}

Status ConvertLock::LockManifest() {
  // Polled, not F_SETLKW: a holder that is stopped or hung (never one that
  // died: the kernel drops its locks) must be an error, not a wait forever.
  const auto deadline = std::chrono::steady_clock::now() + kManifestLockTimeout;
  auto pause = std::chrono::microseconds(200);
  while (true) {
    bool held = false;
    SLUICE_RETURN_IF_ERROR(Try(F_WRLCK, 0, 1, &held));
    if (!held) return Status::OK();
    if (std::chrono::steady_clock::now() >= deadline) {
      const Status holder = HeldBy(F_WRLCK, 0, 1, "its manifest");
      return Status::Unavailable(
          fmt::format("{} (for more than {} s, where an update takes milliseconds)",
                      holder.message(), kManifestLockTimeout.count()));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(2 * pause, std::chrono::milliseconds(50));
  }
}

void ConvertLock::UnlockManifest() {
  struct flock fl = Range(F_UNLCK, 0, 1);
  (void)::fcntl(fd_, F_SETLK, &fl);
}

Status ConvertLock::JoinConversion() { return Set(F_RDLCK, 1, 1, "its conversion"); }

Status ConvertLock::TakeConversion() { return Set(F_WRLCK, 1, 1, "its conversion"); }

Status ConvertLock::LockShards(std::span<const size_t> shards) {
  // Runs of consecutive shards are one lock each.
  for (size_t i = 0; i < shards.size();) {
    size_t j = i + 1;
    while (j < shards.size() && shards[j] == shards[j - 1] + 1) ++j;
    const std::string what = j - i == 1 ? fmt::format("shard {}", shards[i])
                                        : fmt::format("shards {}-{}", shards[i], shards[j - 1]);
    SLUICE_RETURN_IF_ERROR(
        Set(F_WRLCK, static_cast<off_t>(2 + shards[i]), static_cast<off_t>(j - i), what));
    i = j;
  }
  return Status::OK();
}

}  // namespace sluice::tools
