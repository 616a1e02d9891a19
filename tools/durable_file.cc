#include "durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sluice::tools {

Status SyncFile(std::FILE* f, const std::string& name) {
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
    return Status::Unavailable("cannot sync " + name + ": " + std::strerror(errno));
  }
  return Status::OK();
}

Status SyncParentFolder(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable("cannot open folder " + dir + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::Unavailable("cannot sync folder " + dir + ": " + std::strerror(err));
  return Status::OK();
}

}  // namespace sluice::tools
