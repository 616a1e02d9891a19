// FileSystemFor's registry, the helpers and URI path arithmetic.
#include "sluice/core/filesystem.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "sluice/core/internal/local_filesystem.h"
#include "sluice/core/internal/remote_filesystems.h"

namespace sluice {

namespace {

// "s3://b/k" -> "s3"; "" when there is no "scheme://" (a plain path).
std::string_view RawScheme(std::string_view path) {
  const size_t colon = path.find("://");
  if (colon == std::string_view::npos || colon == 0) return {};
  for (size_t i = 0; i < colon; ++i) {
    const char c = path[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return {};
  }
  return path.substr(0, colon);
}

// Where the path part of a URI starts: after "scheme://authority" for
// remote URIs (the bucket stays with the scheme), 0 for plain paths.
size_t RootEnd(std::string_view path) {
  const std::string_view scheme = RawScheme(path);
  if (scheme.empty()) return 0;
  const size_t after = scheme.size() + 3;
  if (UriScheme(path) == "file") return after;
  const size_t slash = path.find('/', after);
  return slash == std::string_view::npos ? path.size() : slash;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<FileSystem>, std::less<>> overrides;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: used from static destructors
  return *registry;
}

}  // namespace

std::string UriScheme(std::string_view path) {
  std::string scheme(RawScheme(path));
  if (scheme.empty()) return "file";
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return scheme;
}

bool IsRemotePath(std::string_view path) { return UriScheme(path) != "file"; }

bool RemoteFileSystemsAvailable() { return internal::RemoteFileSystemsBuilt(); }

Result<std::shared_ptr<FileSystem>> FileSystemFor(std::string_view path) {
  const std::string scheme = UriScheme(path);
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (auto it = r.overrides.find(scheme); it != r.overrides.end()) return it->second;
  }
  if (scheme == "file") return internal::LocalFileSystem();
  return internal::MakeRemoteFileSystem(scheme, path);
}

void RegisterFileSystem(std::string scheme, std::shared_ptr<FileSystem> fs) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (fs) {
    r.overrides[std::move(scheme)] = std::move(fs);
  } else {
    r.overrides.erase(scheme);
  }
}

Result<std::optional<FileInfo>> StatPath(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto fs, FileSystemFor(path));
  return fs->Stat(path);
}

Result<bool> PathExists(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto info, StatPath(path));
  return info.has_value();
}

Status DeletePath(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto fs, FileSystemFor(path));
  return fs->Delete(path);
}

Status CreateDirs(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto fs, FileSystemFor(path));
  return fs->CreateDirs(path);
}

Result<std::vector<FileInfo>> ListFolder(const std::string& dir, bool recursive) {
  SLUICE_ASSIGN_OR_RETURN(auto fs, FileSystemFor(dir));
  std::vector<FileInfo> out;
  SLUICE_RETURN_IF_ERROR(fs->List(dir, recursive, [&](const FileInfo& info) {
    out.push_back(info);
    return Status::OK();
  }));
  std::sort(out.begin(), out.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.path < b.path; });
  return out;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string out(dir);
  if (out.back() != '/') out += '/';
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  out += name;
  return out;
}

std::string ParentPath(std::string_view path) {
  const size_t root = RootEnd(path);
  while (path.size() > root + 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  if (slash < root) return std::string(path.substr(0, root));
  if (slash == 0) return "/";
  if (slash == root && root > 0) return std::string(path.substr(0, root));
  return std::string(path.substr(0, slash));
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace sluice
