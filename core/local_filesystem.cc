// The local disk as a FileSystem.
#include "sluice/core/internal/local_filesystem.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "sluice/core/os_error.h"

namespace sluice::internal {

namespace fs = std::filesystem;

std::string_view StripFileScheme(std::string_view path) {
  if (path.size() >= 7 && (path.substr(0, 7) == "file://" || path.substr(0, 7) == "FILE://")) {
    path.remove_prefix(7);
  }
  return path;
}

namespace {

Status FsError(const std::string& what, const std::error_code& ec) {
  return OsError(what, ec.value());
}

// Size and modification time from stat(2); false if it fails.
bool SizeAndTime(const std::string& path, FileInfo* info) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  info->size = info->is_dir ? 0 : static_cast<uint64_t>(st.st_size);
  info->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  return true;
}

// An OutputFile (temporary name, rename on Close) as a WritableFile.
class LocalWritableFile final : public WritableFile {
 public:
  explicit LocalWritableFile(std::unique_ptr<OutputFile> out) : out_(std::move(out)) {}
  Status Append(std::string_view data) override { return out_->Append(data); }
  Status Flush() override { return out_->Sync(); }
  Status Close() override { return out_->Commit(); }
  void Abort() override { out_->Abandon(); }
  const std::string& path() const override { return out_->path(); }

 private:
  std::unique_ptr<OutputFile> out_;
};

class Local final : public FileSystem {
 public:
  std::string_view scheme() const override { return "file"; }
  bool is_remote() const override { return false; }

  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    return OpenReadableFile(std::string(StripFileScheme(path)));
  }

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path) override {
    SLUICE_ASSIGN_OR_RETURN(auto out, OutputFile::Create(std::string(StripFileScheme(path))));
    return std::unique_ptr<WritableFile>(new LocalWritableFile(std::move(out)));
  }

  Result<std::optional<FileInfo>> Stat(const std::string& path) override {
    const fs::path p(StripFileScheme(path));
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec) {
      if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
        return std::optional<FileInfo>();
      }
      return FsError("stat " + path, ec);
    }
    if (!fs::exists(st)) return std::optional<FileInfo>();
    FileInfo info{path, fs::is_directory(st), 0};
    SizeAndTime(p.string(), &info);
    return std::optional<FileInfo>(std::move(info));
  }

  Status List(const std::string& dir, bool recursive,
              const std::function<Status(const FileInfo&)>& visit) override {
    const std::string d(StripFileScheme(dir));
    std::error_code ec;
    if (!fs::is_directory(d, ec)) return Status::OK();
    auto one = [&](const fs::directory_entry& e) -> Status {
      std::error_code e2;
      const bool is_dir = e.is_directory(e2);
      if (recursive && is_dir) return Status::OK();
      FileInfo info{e.path().string(), is_dir, 0};
      SizeAndTime(info.path, &info);
      return visit(info);
    };
    if (recursive) {
      fs::recursive_directory_iterator it(d, fs::directory_options::skip_permission_denied, ec),
          end;
      for (; !ec && it != end; it.increment(ec)) SLUICE_RETURN_IF_ERROR(one(*it));
    } else {
      fs::directory_iterator it(d, ec), end;
      for (; !ec && it != end; it.increment(ec)) SLUICE_RETURN_IF_ERROR(one(*it));
    }
    if (ec) return FsError("listing " + d, ec);
    return Status::OK();
  }

  Status Delete(const std::string& path) override {
    std::error_code ec;
    fs::remove(fs::path(StripFileScheme(path)), ec);
    if (ec && ec != std::errc::no_such_file_or_directory) return FsError("removing " + path, ec);
    return Status::OK();
  }

  Status CreateDirs(const std::string& path) override {
    const fs::path p(StripFileScheme(path));
    if (p.empty()) return Status::OK();
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) return FsError("creating the folder " + path, ec);
    return Status::OK();
  }
};

}  // namespace

std::shared_ptr<FileSystem> LocalFileSystem() {
  static const std::shared_ptr<FileSystem> local = std::make_shared<Local>();
  return local;
}

}  // namespace sluice::internal
