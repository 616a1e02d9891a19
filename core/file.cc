// Reading: POSIX and in-memory ReadableFiles, ReadWholeFile. (Writing is in
// output_file.cc.)
#include "sluice/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sluice/core/filesystem.h"
#include "sluice/core/internal/local_filesystem.h"
#include "sluice/core/internal/remote_cache_open.h"
#include "sluice/core/os_error.h"

namespace sluice {

Status OsError(const std::string& what, int err) {
  const std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT: return Status::NotFound(msg);
    case ENOSPC:
    case EDQUOT:
    case EFBIG: return Status::ResourceExhausted(msg);
    case EACCES:
    case EPERM:
    case EROFS:
    case EISDIR: return Status::FailedPrecondition(msg);
    default: return Status::Unavailable(msg);
  }
}

namespace {

// Reads until `n` bytes or the end of the file; EINTR is retried. pread for
// files that can seek, read (at the current position, which must be
// `offset`) for pipes and character devices.
Result<size_t> PreadFully(int fd, const std::string& path, uint64_t offset, char* dst, size_t n,
                          bool seekable = true) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = seekable
                            ? ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done))
                            : ::read(fd, dst + done, n - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return OsError("reading " + std::to_string(n - done) + " bytes at offset " +
                         std::to_string(offset + done) + " of " + path,
                     errno);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }

  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    return PreadFully(fd_, path_, offset, static_cast<char*>(dst), n);
  }

  Result<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return OsError("stat " + path_, errno);
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

// A file read once, in order (a pipe): see ReadableFile::is_stream.
class StreamFile final : public ReadableFile {
 public:
  StreamFile(std::string name, int fd, bool owns_fd)
      : name_(std::move(name)), fd_(fd), owns_fd_(owns_fd) {}
  ~StreamFile() override {
    if (owns_fd_) ::close(fd_);
  }

  Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) override {
    char* out = static_cast<char*>(dst);
    size_t done = 0;
    if (offset < pos_) {
      // Behind: only the head is kept.
      if (offset >= head_.size()) return BehindError(offset);
      done = std::min<size_t>(n, head_.size() - offset);
      std::memcpy(out, head_.data() + offset, done);
      if (done == n) return done;
      if (offset + done < pos_) return BehindError(offset + done);
    }
    while (offset + done > pos_) {  // ahead: skip
      char skip[4096];
      const size_t want = std::min<uint64_t>(sizeof(skip), offset + done - pos_);
      SLUICE_ASSIGN_OR_RETURN(size_t got, ReadMore(skip, want));
      if (got == 0) return done;
    }
    while (done < n) {
      SLUICE_ASSIGN_OR_RETURN(size_t got, ReadMore(out + done, n - done));
      if (got == 0) break;
      done += got;
    }
    return done;
  }
  Result<uint64_t> Size() override { return pos_; }
  const std::string& name() const override { return name_; }
  bool is_stream() const override { return true; }

 private:
  Status BehindError(uint64_t offset) const {
    return Status::FailedPrecondition("cannot read " + name_ + " at offset " +
                                      std::to_string(offset) +
                                      ": it is a stream (a pipe), already read to offset " +
                                      std::to_string(pos_) + ", and cannot seek back");
  }

  // Reads the next bytes of the stream (0 at its end), keeping the head.
  Result<size_t> ReadMore(char* dst, size_t n) {
    if (eof_) return size_t{0};
    SLUICE_ASSIGN_OR_RETURN(size_t got, PreadFully(fd_, name_, pos_, dst, n, /*seekable=*/false));
    if (got < n) eof_ = true;
    if (pos_ < kStreamHeadBytes) {
      head_.append(dst, std::min<size_t>(got, kStreamHeadBytes - pos_));
    }
    pos_ += got;
    return got;
  }

  std::string name_;
  int fd_;
  bool owns_fd_;
  uint64_t pos_ = 0;  // bytes read from the stream
  bool eof_ = false;
  std::string head_;  // its first bytes, up to kStreamHeadBytes
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

Status TooLarge(const std::string& path, int64_t size, int64_t max_bytes) {
  return Status::ResourceExhausted(path + " has " + std::to_string(size) +
                                   " bytes, more than the limit of " + std::to_string(max_bytes));
}

}  // namespace

Result<std::unique_ptr<ReadableFile>> OpenReadableFile(const std::string& uri) {
  if (IsRemotePath(uri)) {
    SLUICE_ASSIGN_OR_RETURN(auto fs, FileSystemFor(uri));
    return internal::OpenRemoteReadable(*fs, uri);
  }
  const std::string path(internal::StripFileScheme(uri));
  if (path == "-") return std::unique_ptr<ReadableFile>(new StreamFile("stdin", 0, false));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OsError("cannot open " + path, errno);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::FailedPrecondition("cannot read " + path + ": it is a directory");
  }
  if (::lseek(fd, 0, SEEK_CUR) < 0 && errno == ESPIPE) {
    return std::unique_ptr<ReadableFile>(new StreamFile(path, fd, true));
  }
  return std::unique_ptr<ReadableFile>(new PosixReadableFile(path, fd));
}

std::unique_ptr<ReadableFile> NewMemoryFile(std::string name, std::string contents) {
  return std::make_unique<MemoryFile>(std::move(name), std::move(contents));
}

// A whole object of a remote store, read at once after its size.
Result<WholeFile> ReadWholeRemoteFile(const std::string& uri, const ReadWholeFileOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(auto file, OpenReadableFile(uri));
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  const int64_t max_bytes = std::max<int64_t>(options.max_bytes, 0);
  if (size > static_cast<uint64_t>(max_bytes)) {
    return TooLarge(uri, static_cast<int64_t>(size), max_bytes);
  }
  SLUICE_ASSIGN_OR_RETURN(Buffer buf,
                          Buffer::Allocate(options.room_before + size + options.room_after));
  char* base = reinterpret_cast<char*>(buf.data()) + options.room_before;
  size_t n = 0;
  while (n < size) {
    SLUICE_ASSIGN_OR_RETURN(size_t got, file->ReadAt(n, base + n, size - n));
    if (got == 0) break;
    n += got;
  }
  if (n != size) {
    return Status::DataLoss(uri + " ended at " + std::to_string(n) + " of its " +
                            std::to_string(size) + " bytes while read");
  }
  WholeFile whole;
  whole.buffer = std::move(buf);
  whole.offset = options.room_before;
  whole.size = n;
  return whole;
}

Result<WholeFile> ReadWholeFile(const std::string& uri, const ReadWholeFileOptions& options) {
  if (IsRemotePath(uri)) return ReadWholeRemoteFile(uri, options);
  const std::string path(internal::StripFileScheme(uri));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OsError("cannot open " + path, errno);
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return OsError("cannot stat " + path, errno);
  if (S_ISDIR(st.st_mode)) return Status::InvalidArgument(path + " is a directory");
  const int64_t max_bytes = std::max<int64_t>(options.max_bytes, 0);
  if (st.st_size > max_bytes) return TooLarge(path, st.st_size, max_bytes);
  const bool seekable = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
  const size_t room = options.room_before + options.room_after;
  // Sized from fstat, plus one byte to notice growth without a second read;
  // a pipe or an empty-looking special file starts at 64 KiB.
  size_t capacity = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : size_t{64} << 10;
  capacity = std::min<size_t>(capacity, static_cast<size_t>(max_bytes) + 1);
  SLUICE_ASSIGN_OR_RETURN(Buffer buf, Buffer::Allocate(room + capacity));
  size_t n = 0;
  for (;;) {
    char* base = reinterpret_cast<char*>(buf.data()) + options.room_before;
    SLUICE_ASSIGN_OR_RETURN(size_t got, PreadFully(fd, path, n, base + n, capacity - n, seekable));
    n += got;
    if (n < capacity) break;  // the end of the file
    if (n > static_cast<size_t>(max_bytes)) {
      return Status::ResourceExhausted(path + " grew while read past the limit of " +
                                       std::to_string(max_bytes) + " bytes");
    }
    // Full: the file grew (or is a pipe). Double, within the cap.
    const size_t bigger = std::min<size_t>(2 * capacity, static_cast<size_t>(max_bytes) + 1);
    SLUICE_ASSIGN_OR_RETURN(Buffer next, Buffer::Allocate(room + bigger));
    std::memcpy(next.data(), buf.data(), options.room_before + n);
    buf = std::move(next);
    capacity = bigger;
  }
  WholeFile file;
  file.buffer = std::move(buf);
  file.offset = options.room_before;
  file.size = n;
  return file;
}

Result<std::string> ReadFileToString(const std::string& path, int64_t max_bytes) {
  ReadWholeFileOptions options;
  options.max_bytes = max_bytes;
  SLUICE_ASSIGN_OR_RETURN(WholeFile file, ReadWholeFile(path, options));
  return std::string(file.bytes());
}

}  // namespace sluice
