// Writing: OutputFile (temporary name, rename on Commit) and its helpers.
#include "sluice/core/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "sluice/core/filesystem.h"
#include "sluice/core/internal/local_filesystem.h"
#include "sluice/core/os_error.h"

namespace sluice {
namespace {

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string FileName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Options for a target that is not a regular file: written in place; an
// fsync means nothing there (and fails on pipes).
OutputFileOptions Stream(OutputFileOptions options) {
  options.atomic = false;
  options.sync = false;
  return options;
}

}  // namespace

OutputFile::OutputFile(std::string path, std::string write_path, int fd, OutputFileOptions options)
    : path_(std::move(path)), write_path_(std::move(write_path)), fd_(fd), options_(options) {}

Result<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& uri,
                                                       const OutputFileOptions& options) {
  if (IsRemotePath(uri)) {
    // An object store publishes the object whole when the upload completes:
    // atomic without a temporary name. It cannot append.
    if (!options.atomic && options.append) {
      return Status::FailedPrecondition("cannot append to " + uri +
                                        ": objects in a store are written whole");
    }
    SLUICE_ASSIGN_OR_RETURN(auto fs, FileSystemFor(uri));
    SLUICE_ASSIGN_OR_RETURN(auto writable, fs->OpenWritable(uri));
    std::unique_ptr<OutputFile> out(new OutputFile(uri, uri, -1, options));
    out->remote_ = std::move(writable);
    return out;
  }
  const std::string path(internal::StripFileScheme(uri));
  if (path == "-") {
    const int fd = ::fcntl(1, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return OsError("cannot write to standard output", errno);
    std::unique_ptr<OutputFile> out(new OutputFile("stdout", "stdout", fd, Stream(options)));
    out->stream_ = true;
    return out;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A FIFO, a terminal, /dev/stdout: written as it is, never renamed over.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return OsError("cannot open " + path + " for writing", errno);
    std::unique_ptr<OutputFile> out(new OutputFile(path, path, fd, Stream(options)));
    out->stream_ = true;
    return out;
  }
  if (!options.atomic) {
    const int fd = ::open(
        path.c_str(), O_WRONLY | O_CREAT | (options.append ? O_APPEND : O_TRUNC) | O_CLOEXEC, 0666);
    if (fd < 0) return OsError("cannot create " + path, errno);
    return std::unique_ptr<OutputFile>(new OutputFile(path, path, fd, options));
  }
  std::random_device rd;
  const std::string dir = DirName(path), base = FileName(path);
  for (int attempt = 0; attempt < 16; ++attempt) {
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), "%08x", static_cast<unsigned>(rd()));
    const std::string tmp = dir + "/." + base + ".tmp-" + suffix;
    // O_EXCL with mode 0666 lets the umask decide permissions, as for any new file.
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno != EEXIST) return OsError("cannot create " + path + " (as " + tmp + ")", errno);
      continue;
    }
    // The lock says "alive" to RemoveAbandonedTemporaries. It sits on a
    // descriptor of its own, so that it outlives closing `fd` in Commit()
    // until the rename. Losing the race for it to a cleaner means the
    // cleaner is deleting this name: take another.
    const int lock_fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    if (lock_fd >= 0 && ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(lock_fd);
      ::close(fd);
      continue;
    }
    std::unique_ptr<OutputFile> out(new OutputFile(path, tmp, fd, options));
    out->lock_fd_ = lock_fd;  // -1 if it could not be opened: no lock, nothing else lost
    return out;
  }
  return Status::Unavailable("cannot find a free temporary name beside " + path);
}

OutputFile::~OutputFile() {
  if (!done_) Abandon();
}

Status OutputFile::Error(std::string_view what, int err) {
  return OsError(std::string(what) + " " + path_, err);
}

Status OutputFile::Append(std::string_view data) {
  if (done_) return Status::FailedPrecondition("writing " + path_ + ": the file is closed");
  if (remote_) return remote_->Append(data);
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error("writing", errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Status OutputFile::Sync() {
  if (remote_) return remote_->Flush();
  if (::fsync(fd_) != 0) return Error("syncing", errno);
  return Status::OK();
}

Status OutputFile::Commit() {
  if (done_) return Status::FailedPrecondition(path_ + " is already closed");
  if (remote_) {
    done_ = true;
    Status s = remote_->Close();
    if (!s.ok()) remote_->Abort();
    return s;
  }
  if (options_.sync) {
    Status s = Sync();
    if (!s.ok()) {
      Abandon();
      return s;
    }
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    Abandon();
    return Error("closing", err);
  }
  if (options_.atomic && ::rename(write_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    Abandon();
    return OsError("cannot rename " + write_path_ + " to " + path_, err);
  }
  ReleaseLock();
  done_ = true;
  if (options_.sync && options_.atomic) {
    // Make the rename itself durable.
    return SyncParentFolder(path_);
  }
  return Status::OK();
}

void OutputFile::Abandon() {
  if (remote_ && !done_) remote_->Abort();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (options_.atomic && !done_) ::unlink(write_path_.c_str());
  ReleaseLock();
  done_ = true;
}

void OutputFile::ReleaseLock() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

bool RemoveIfAbandoned(const std::string& tmp_path) {
  // Hold the lock while unlinking: a writer that opened the name but had
  // not locked it yet then fails to, and takes another name.
  const int fd = ::open(tmp_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool removed = ::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(tmp_path.c_str()) == 0;
  ::close(fd);
  return removed;
}

Result<size_t> RemoveAbandonedTemporaries(const std::string& path) {
  if (IsRemotePath(path)) return size_t{0};  // uploads publish nothing until complete
  const std::string dir = DirName(path), prefix = "." + FileName(path) + ".tmp-";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return size_t{0};
    return OsError("cannot list " + dir, errno);
  }
  size_t removed = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!name.starts_with(prefix)) continue;
    if (RemoveIfAbandoned(dir + "/" + name)) ++removed;
  }
  ::closedir(d);
  return removed;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents,
                           const OutputFileOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Create(path, options));
  SLUICE_RETURN_IF_ERROR(file->Append(contents));
  return file->Commit();
}

Status SyncParentFolder(const std::string& path) {
  if (IsRemotePath(path)) return Status::OK();  // an object is durable once written
  const std::string dir = DirName(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return OsError("cannot open the folder of " + path, errno);
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0) return OsError("syncing the folder of " + path, err);
  return Status::OK();
}

}  // namespace sluice
