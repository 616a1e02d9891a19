#include "sluice/records/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace sluice {
namespace {

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = fmt::format("{} {}: {}", what, path, std::strerror(err));
  if (err == ENOENT) return Status::NotFound(msg);
  if (err == EACCES || err == EISDIR) return Status::FailedPrecondition(msg);
  return Status::Unavailable(msg);
}

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }

  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    auto* out = static_cast<char*>(dst);
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(fmt::format("reading {} bytes at offset {} of", n - done, offset + done),
                           path_, errno);
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

  Result<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus("stat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  const std::string& name() const override { return path_; }

  void AdviseSequential() override {
#ifdef POSIX_FADV_SEQUENTIAL
    (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  }

 private:
  std::string path_;
  int fd_;
};

class MemoryFile final : public ReadableFile {
 public:
  MemoryFile(std::string name, std::string contents)
      : name_(std::move(name)), contents_(std::move(contents)) {}

  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    if (offset >= contents_.size()) return size_t{0};
    const size_t got = std::min<uint64_t>(n, contents_.size() - offset);
    std::memcpy(dst, contents_.data() + offset, got);
    return got;
  }
  Result<uint64_t> Size() override { return static_cast<uint64_t>(contents_.size()); }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  std::string contents_;
};

}  // namespace

Result<std::unique_ptr<ReadableFile>> OpenReadableFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::FailedPrecondition(fmt::format("cannot read {}: it is a directory", path));
  }
  return std::unique_ptr<ReadableFile>(new PosixReadableFile(path, fd));
}

std::unique_ptr<ReadableFile> NewMemoryFile(std::string name, std::string contents) {
  return std::make_unique<MemoryFile>(std::move(name), std::move(contents));
}

}  // namespace sluice
