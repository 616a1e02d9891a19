#include "sluice/records/internal/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

namespace sluice::records_internal {
namespace {

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Status ErrnoStatus(std::string msg, int err) {
  msg += ": ";
  msg += std::strerror(err);
  if (err == ENOENT) return Status::NotFound(msg);
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return Status::ResourceExhausted(msg);
  if (err == EACCES || err == EROFS || err == EISDIR) return Status::FailedPrecondition(msg);
  return Status::Unavailable(msg);
}

}  // namespace

OutputFile::OutputFile(std::string path, std::string write_path, int fd, OutputFileOptions options)
    : path_(std::move(path)), write_path_(std::move(write_path)), fd_(fd), options_(options) {}

Result<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& path,
                                                       const OutputFileOptions& options) {
  if (!options.atomic) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return ErrnoStatus("cannot create " + path, errno);
    return std::unique_ptr<OutputFile>(new OutputFile(path, path, fd, options));
  }
  std::random_device rd;
  const std::string dir = DirName(path), base = BaseName(path);
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string tmp = fmt::format("{}/.{}.tmp-{:08x}", dir, base, rd());
    // O_EXCL with mode 0666 lets the umask decide permissions, as for any new file.
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return std::unique_ptr<OutputFile>(new OutputFile(path, tmp, fd, options));
    if (errno != EEXIST) return ErrnoStatus("cannot create " + path + " (as " + tmp + ")", errno);
  }
  return Status::Unavailable("cannot find a free temporary name beside " + path);
}

OutputFile::~OutputFile() {
  if (!done_) Abandon();
}

Status OutputFile::Error(std::string_view what, int err) {
  return ErrnoStatus(fmt::format("{} {}", what, path_), err);
}

Status OutputFile::Append(std::string_view data) {
  if (done_) return Status::FailedPrecondition("writing " + path_ + ": the file is closed");
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
  if (::fsync(fd_) != 0) return Error("syncing", errno);
  return Status::OK();
}

Status OutputFile::Commit() {
  if (done_) return Status::FailedPrecondition(path_ + " is already closed");
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
    return ErrnoStatus("cannot rename " + write_path_ + " to " + path_, err);
  }
  done_ = true;
  if (options_.sync && options_.atomic) {
    // Make the rename itself durable.
    const int dfd = ::open(DirName(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      const int rc = ::fsync(dfd);
      const int err = errno;
      ::close(dfd);
      if (rc != 0) return Error("syncing the directory of", err);
    }
  }
  return Status::OK();
}

void OutputFile::Abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (options_.atomic && !done_) ::unlink(write_path_.c_str());
  done_ = true;
}

}  // namespace sluice::records_internal
