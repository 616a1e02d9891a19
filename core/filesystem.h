// FileSystem: where the bytes of a path or URI live, resolved in one place
// (as Arrow's FileSystem and TensorFlow's FileSystem registry do):
//
//   /data/train-0.tfrecord, data/x, file:///data/x   the local disk
//   s3://bucket/key                                  Amazon S3 and S3-compatible stores
//   gs://bucket/key, gcs://bucket/key                Google Cloud Storage
//   az://container/blob, abfs[s]://container@account.dfs.core.windows.net/blob
//                                                    Azure Blob Storage / ADLS Gen2
//
// The object stores come from Apache Arrow C++ and exist only in a build
// with it (SLUICE_WITH_ARROW; RemoteFileSystemsAvailable()); without it
// their URIs are FailedPrecondition naming the URI and saying so.
// Credentials, region and endpoint come the way each cloud's own tools take
// them (docs/objstore.md): environment variables, config files, instance
// metadata; for S3-compatible stores (MinIO, R2, Ceph, moto) the endpoint
// from AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, or `?endpoint_override=host:port`
// (plus `&scheme=http`) on the URI.
//
// Everything in core/file.h (OpenReadableFile, ReadWholeFile, OutputFile)
// goes through this, so every reader and writer takes URIs unchanged.
//
// Writing: a file system's WritableFile publishes all or nothing. On a local
// disk that is OutputFile's temporary name and rename; on an object store
// the object appears whole when Close() completes the upload, and Abort()
// (or destruction without Close) leaves no object. Object stores cannot
// append to or rename an object.
//
// Thread-safety: FileSystem objects are thread-safe (FileSystemFor returns
// shared instances); a WritableFile is used by one thread at a time.
#ifndef SLUICE_CORE_FILESYSTEM_H_
#define SLUICE_CORE_FILESYSTEM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/core/result.h"

namespace sluice {

struct FileInfo {
  // The full path or URI (scheme included for object stores), usable with
  // FileSystemFor() and OpenReadableFile().
  std::string path;
  bool is_dir = false;
  uint64_t size = 0;  // bytes; 0 for a folder
  // Last modification, nanoseconds since the epoch; 0 when unknown.
  int64_t mtime_ns = 0;
};

// An object or file being written: Append, then Close to publish it.
class WritableFile {
 public:
  virtual ~WritableFile() = default;  // without Close(): as Abort()
  virtual Status Append(std::string_view data) = 0;
  // Pushes what was appended towards durability (fsync; an object store
  // uploads a part). Never makes a partial object visible.
  virtual Status Flush() = 0;
  // Publishes the file: after OK, readers see all of it.
  virtual Status Close() = 0;
  // Drops what was written; nothing is published. Safe after a failed
  // Append or Close.
  virtual void Abort() = 0;
  virtual const std::string& path() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // "file" for the local disk; "s3", "gs", "az", "abfs" for object stores.
  virtual std::string_view scheme() const = 0;
  // True for object stores: no append, no rename, no folders of their own.
  virtual bool is_remote() const = 0;

  virtual Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) = 0;
  // A new file that replaces `path` when closed, all or nothing (above).
  virtual Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path) = 0;
  // What is at `path`; nullopt if nothing is (an object store's "folder"
  // exists when some key is under it).
  virtual Result<std::optional<FileInfo>> Stat(const std::string& path) = 0;
  // Calls `visit` for each entry under the folder `dir` (files and, unless
  // recursive, subfolders), streaming: a million keys are never held at
  // once. Order is the store's (object stores: key order). A `visit` error
  // stops the listing and is returned. A missing folder lists nothing.
  virtual Status List(const std::string& dir, bool recursive,
                      const std::function<Status(const FileInfo&)>& visit) = 0;
  // Removes a file; OK if it does not exist.
  virtual Status Delete(const std::string& path) = 0;
  // Makes the folder and its parents (nothing to do on object stores).
  virtual Status CreateDirs(const std::string& path) = 0;
};

// The scheme of `path` ("s3" for "s3://b/k"), "file" for a plain path or
// file:// URI. Schemes are compared in lower case.
std::string UriScheme(std::string_view path);
// True for a URI of an object store (any scheme but "file").
bool IsRemotePath(std::string_view path);
// True when this build has the object-store file systems (Arrow C++).
bool RemoteFileSystemsAvailable();

// The file system that holds `path`. InvalidArgument for a scheme sluice
// does not know; FailedPrecondition for an object store in a build without
// Arrow, or one whose client cannot start (both naming the URI).
Result<std::shared_ptr<FileSystem>> FileSystemFor(std::string_view path);

// Makes `scheme` resolve to `fs` (tests: an in-memory or failing store);
// a null `fs` restores the built-in one. Thread-safe.
void RegisterFileSystem(std::string scheme, std::shared_ptr<FileSystem> fs);

// ---------------------------------------------------------------- helpers
// Each resolves the file system of its argument.

// Whether anything is at `path`.
Result<bool> PathExists(const std::string& path);
Result<std::optional<FileInfo>> StatPath(const std::string& path);
// Removes a file; OK if missing.
Status DeletePath(const std::string& path);
// Makes a folder and its parents; OK on object stores.
Status CreateDirs(const std::string& path);
// The entries directly in (or, recursive, under) `dir`, sorted by path.
Result<std::vector<FileInfo>> ListFolder(const std::string& dir, bool recursive = false);

// The files whose paths match the glob `pattern`, sorted: `*`, `?` and
// `[...]` as fnmatch(3) with FNM_PATHNAME (they never cross a '/'). Lists,
// streaming, only the folder that holds the longest wildcard-free prefix
// (recursively when a wildcard is in a folder name), so it works on object
// stores ("s3://b/train-*.tfrecord"); a query ("?endpoint_override=...")
// is kept on the results. A pattern without wildcards matches itself if it
// is a file. Nothing matching is an empty list, not an error.
// (list_files uses it for URIs; plain paths go to glob(3).)
Result<std::vector<std::string>> MatchFiles(const std::string& pattern);

// Path arithmetic that keeps a URI's scheme and bucket:
// JoinPath("s3://b/dir", "x") == "s3://b/dir/x"; ParentPath("s3://b/d/x")
// == "s3://b/d"; ParentPath("x") == ""; BaseName("s3://b/d/x") == "x".
std::string JoinPath(std::string_view dir, std::string_view name);
std::string ParentPath(std::string_view path);
std::string BaseName(std::string_view path);

}  // namespace sluice

#endif  // SLUICE_CORE_FILESYSTEM_H_
