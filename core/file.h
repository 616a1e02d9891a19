// The file layer every module reads and writes through (leveldb's Env, cut
// to what sluice needs):
//
//   ReadableFile    bytes read at offsets, from a POSIX file or from memory
//                   (NewMemoryFile: tests and fuzzers feed readers without
//                   touching the disk).
//   ReadWholeFile   a whole file into one aligned Buffer, with a size cap
//                   checked before anything is allocated.
//   OutputFile      a file written in one go and published atomically:
//                   a hidden temporary name, renamed over the target on
//                   Commit(); `sync` makes the bytes and the rename durable.
//   WriteFileAtomically  OutputFile for a string in one call.
//
// Errors name the path and, for reads, the offset; the status code follows
// errno: NotFound (ENOENT), ResourceExhausted (ENOSPC, EDQUOT, EFBIG, a file
// over its cap), FailedPrecondition (EACCES, EPERM, EROFS), Unavailable
// (anything else).
//
// Thread-safety: ReadableFile implementations here allow concurrent ReadAt()
// calls; an OutputFile is used by one thread at a time; the free functions
// share no state.
#ifndef SLUICE_CORE_FILE_H_
#define SLUICE_CORE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/buffer.h"
#include "sluice/core/result.h"

namespace sluice {

// ---------------------------------------------------------------- reading

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;

  // Reads up to `n` bytes at `offset` into `dst`, returning how many were
  // read: fewer than `n` only at the end of the file, 0 at or past it.
  virtual Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) = 0;
  // The file's current size in bytes. A file may grow while it is read (a
  // TFRecord still being written).
  virtual Result<uint64_t> Size() = 0;
  // The name used in error messages (the path for POSIX files).
  virtual const std::string& name() const = 0;
  // Hints that the file will be read sequentially from the start.
  virtual void AdviseSequential() {}
  // True for a stream that cannot seek (a pipe, a FIFO, a terminal, "-"):
  // its bytes arrive once, in order. ReadAt() then serves offsets from the
  // first kStreamHeadBytes again (so a reader may look at the start before
  // reading from it) and any offset ahead of what was read (skipping);
  // anything else behind is FailedPrecondition. Size() is the bytes read so
  // far: a stream's length is known only at its end.
  virtual bool is_stream() const { return false; }
};

// Bytes at the start of a stream that ReadableFile::ReadAt can serve twice.
inline constexpr size_t kStreamHeadBytes = size_t{64} << 10;

// Opens `path` for reading: a path, a file:// URI or an object store's URI
// (core/filesystem.h). "-" is standard input. A pipe, FIFO or other
// file that cannot seek opens as a stream (ReadableFile::is_stream). NotFound
// if it does not exist, FailedPrecondition for a directory; other failures
// carry the OS error text.
Result<std::unique_ptr<ReadableFile>> OpenReadableFile(const std::string& path);

// A file whose bytes are `contents`, reported under `name`.
std::unique_ptr<ReadableFile> NewMemoryFile(std::string name, std::string contents);

// Largest file ReadWholeFile() accepts unless told otherwise: 2 GiB,
// tf.string's practical limit.
inline constexpr int64_t kMaxWholeFileBytes = int64_t{2} << 30;

struct ReadWholeFileOptions {
  // Files larger than this are ResourceExhausted before any allocation; a
  // file that grows past it while read (a pipe, a file being written) too.
  int64_t max_bytes = kMaxWholeFileBytes;
  // Free bytes left in front of and behind the file's bytes, for callers
  // that frame the bytes in place (a record header and footer).
  size_t room_before = 0;
  size_t room_after = 0;
};

// A whole file: its bytes are buffer[offset, offset + size).
struct WholeFile {
  Buffer buffer;
  size_t offset = 0;
  size_t size = 0;
  std::string_view bytes() const {
    return {reinterpret_cast<const char*>(buffer.data()) + offset, size};
  }
};

// Reads `path` to its end into one 64-byte aligned buffer (sized from
// fstat, grown only if the file grows). InvalidArgument for a directory.
Result<WholeFile> ReadWholeFile(const std::string& path, const ReadWholeFileOptions& options = {});

// The same into a std::string, for small text files (configs, state files).
Result<std::string> ReadFileToString(const std::string& path,
                                     int64_t max_bytes = kMaxWholeFileBytes);

// ---------------------------------------------------------------- writing

class WritableFile;  // core/filesystem.h

struct OutputFileOptions {
  // Write under a hidden temporary name beside the target
  // (".<name>.tmp-XXXXXXXX", which globs like "train-*" do not match) and
  // rename it over the target on Commit(): readers see the old file or the
  // complete new one, never a partial write. Off: write the target directly.
  bool atomic = true;
  // fsync the file before Commit() closes it and, after the rename, its
  // folder: a committed file survives a power loss. (A killed process never
  // leaves a partial file under the final name even without it.)
  bool sync = false;
  // With atomic = false: append to the target (made if missing) instead of
  // truncating it. Ignored in atomic mode.
  bool append = false;
};

class OutputFile {
 public:
  // `path` may be an object-store URI (core/filesystem.h): the object is
  // published whole by Commit(); `append` is FailedPrecondition there.
  // "-" is standard output. A target that exists and is not a regular file
  // (a FIFO, a terminal, /dev/stdout) is written in place, without a
  // temporary name or fsync, whatever `options` say.
  static Result<std::unique_ptr<OutputFile>> Create(const std::string& path,
                                                    const OutputFileOptions& options = {});
  // Abandons the file unless it was committed.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  Status Append(std::string_view data);
  // fsync now (for callers that flush periodically).
  Status Sync();
  // Closes (after fsync if options.sync) and, in atomic mode, renames the
  // temporary file to the target. On failure the temporary file is removed.
  // A temporary file left by a killed process is removed by the next
  // RemoveAbandonedTemporaries() of the same target.
  Status Commit();
  // Removes the temporary file (atomic mode) without publishing it.
  void Abandon();

  const std::string& path() const { return path_; }
  // Where bytes are being written now (the temporary name in atomic mode).
  const std::string& write_path() const { return write_path_; }
  // True for standard output, a FIFO or a terminal (see Create()).
  bool is_stream() const { return stream_; }

 private:
  OutputFile(std::string path, std::string write_path, int fd, OutputFileOptions options);
  Status Error(std::string_view what, int err);

  std::string path_;
  std::string write_path_;
  int fd_;
  void ReleaseLock();

  OutputFileOptions options_;
  bool stream_ = false;
  int lock_fd_ = -1;  // holds flock(LOCK_EX) on the temporary file while it is written
  std::unique_ptr<WritableFile> remote_;  // an object-store upload instead of fd_
  bool done_ = false;
};

// A temporary file of an OutputFile (".<name>.tmp-XXXXXXXX") whose writer
// is gone: while an OutputFile writes, it holds an flock() on its
// temporary file, which the kernel drops when the process dies (even by
// SIGKILL), so a lock that can be taken means nobody is writing it.
// Removes `tmp_path` if it is such a file; true if it did.
bool RemoveIfAbandoned(const std::string& tmp_path);
// Deletes the abandoned temporary files of `path` (left by writers that
// were killed), never one a live writer holds. Returns how many.
Result<size_t> RemoveAbandonedTemporaries(const std::string& path);

// Writes `contents` to `path` through an OutputFile: all or nothing.
Status WriteFileAtomically(const std::string& path, std::string_view contents,
                           const OutputFileOptions& options = {});

// fsyncs the folder holding `path` ("." if none), after a rename put `path`
// in place, so that the rename survives a power loss.
Status SyncParentFolder(const std::string& path);

}  // namespace sluice

#endif  // SLUICE_CORE_FILE_H_
