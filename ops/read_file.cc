#include "sluice/ops/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace sluice::ops {
namespace {

Status Errno(const std::string& what, const std::string& path, int err) {
  const std::string msg = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(msg);
  if (err == EACCES || err == EPERM) return Status::FailedPrecondition(msg);
  return Status::Unavailable(msg);
}

}  // namespace

Result<Tensor> ReadFile(const std::string& path, int64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("read_file: cannot open", path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return Errno("read_file: cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("read_file: " + path + " is a directory");
  }
  if (st.st_size > max_bytes) {
    return Status::ResourceExhausted("read_file: " + path + " has " + std::to_string(st.st_size) +
                                     " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  // The size may change while reading (a file being written, a pipe): read
  // until EOF, growing within the limit.
  size_t cap = static_cast<size_t>(st.st_size > 0 ? st.st_size : 64 * 1024);
  SLUICE_ASSIGN_OR_RETURN(Buffer buf, Buffer::Allocate(cap));
  size_t n = 0;
  for (;;) {
    if (n == buf.size()) {
      // Full: one byte more means the file grew (a file being written, a
      // pipe). Probe before allocating, so a regular file is read into one
      // buffer of its size.
      char probe;
      ssize_t r;
      do {
        r = ::pread(fd, &probe, 1, static_cast<off_t>(n));
      } while (r < 0 && errno == EINTR);
      if (r < 0) return Errno("read_file: cannot read", path, errno);
      if (r == 0) break;
      if (static_cast<int64_t>(n) >= max_bytes) {
        return Status::ResourceExhausted("read_file: " + path + " grew past the limit of " +
                                         std::to_string(max_bytes) + " bytes");
      }
      SLUICE_ASSIGN_OR_RETURN(Buffer bigger,
                              Buffer::Allocate(std::min<size_t>(std::max<size_t>(2 * n, 4096),
                                                                static_cast<size_t>(max_bytes))));
      std::memcpy(bigger.data(), buf.data(), n);
      buf = std::move(bigger);
    }
    const ssize_t r = ::pread(fd, buf.data() + n, buf.size() - n, static_cast<off_t>(n));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Errno("read_file: cannot read", path, errno);
    }
    if (r == 0) break;
    n += static_cast<size_t>(r);
  }
  // One string_view over the bytes, stored in its own small buffer.
  SLUICE_ASSIGN_OR_RETURN(Buffer views, Buffer::Allocate(sizeof(std::string_view)));
  new (views.data()) std::string_view(reinterpret_cast<const char*>(buf.data()), n);
  return Tensor::FromStringViews(Shape{}, std::move(views), {std::move(buf)});
}

}  // namespace sluice::ops
