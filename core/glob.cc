// MatchFiles (core/filesystem.h): glob patterns over any FileSystem by
// listing, for stores glob(3) cannot read (object stores).
#include <fnmatch.h>

#include <algorithm>

#include "sluice/core/filesystem.h"

namespace sluice {
namespace {

bool HasWildcard(std::string_view s) { return s.find_first_of("*?[\\") != std::string_view::npos; }

std::string_view WithoutQuery(std::string_view uri) {
  const size_t q = uri.find('?', uri.find("://") == std::string_view::npos ? 0 : uri.find("://"));
  // A '?' is a query only in a URI (scheme://...) and after the last
  // wildcard-free part; in a plain path it is a wildcard.
  if (!IsRemotePath(uri) || q == std::string_view::npos) return uri;
  if (uri.find('=', q) == std::string_view::npos) return uri;  // "a?b": a wildcard
  return uri.substr(0, q);
}

}  // namespace

Result<std::vector<std::string>> MatchFiles(const std::string& pattern_uri) {
  const std::string pattern(WithoutQuery(pattern_uri));
  const std::string query = pattern_uri.substr(pattern.size());
  SLUICE_ASSIGN_OR_RETURN(auto fs, FileSystemFor(pattern_uri));
  std::vector<std::string> out;
  if (!HasWildcard(pattern)) {
    SLUICE_ASSIGN_OR_RETURN(auto info, fs->Stat(pattern_uri));
    if (info && !info->is_dir) out.push_back(pattern_uri);
    return out;
  }
  // The folder to list: the one holding the longest wildcard-free prefix
  // ("s3://b/dir/train-" -> "s3://b/dir"); recursively when a wildcard
  // sits in a folder name ("s3://b/*/x").
  const size_t first = pattern.find_first_of("*?[\\");
  const size_t slash = pattern.rfind('/', first);
  const size_t root = pattern.find("://") == std::string::npos ? 0 : pattern.find("://") + 3;
  if (slash == std::string::npos || slash < root) {
    return Status::InvalidArgument("matching " + pattern_uri +
                                   ": a wildcard in the bucket name is not supported");
  }
  const std::string dir = pattern.substr(0, slash);
  const bool recursive = pattern.find('/', first) != std::string::npos;
  SLUICE_RETURN_IF_ERROR(fs->List(dir + query, recursive, [&](const FileInfo& info) {
    if (info.is_dir) return Status::OK();
    const std::string_view path = WithoutQuery(info.path);
    if (::fnmatch(pattern.c_str(), std::string(path).c_str(), FNM_PATHNAME) == 0) {
      out.push_back(info.path);
    }
    return Status::OK();
  }));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sluice
