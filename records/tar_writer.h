// TarWriter: writes a POSIX tar file (ustar, with pax extended headers for
// names longer than ustar holds and sizes over 8 GiB), as WebDataset shards
// are: members in the order added, regular files with mode 0644, owner 0,
// the given mtime. The file is published atomically by Close() (OutputFile:
// a temporary name renamed over the target); a writer destroyed without
// Close() leaves nothing under the target name.
//
// Not thread-safe: one thread at a time.
#ifndef SLUICE_RECORDS_TAR_WRITER_H_
#define SLUICE_RECORDS_TAR_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/file.h"
#include "sluice/core/result.h"

namespace sluice {

struct TarWriterOptions {
  // fsync the file and its folder at Close() (power-loss safe).
  bool sync = false;
  // Modification time of every member, seconds since the epoch.
  uint64_t mtime = 0;
};

class TarWriter {
 public:
  static Result<std::unique_ptr<TarWriter>> Create(const std::string& path,
                                                   const TarWriterOptions& options = {});
  ~TarWriter();

  // Appends a regular file. InvalidArgument for an empty name or one with a
  // NUL byte.
  Status Add(std::string_view name, std::string_view data);
  // Writes the end of the archive (two zero blocks, padded to 10 KiB as tar
  // does) and publishes the file.
  Status Close();
  // Bytes written so far.
  uint64_t bytes_written() const { return bytes_; }

 private:
  TarWriter(std::unique_ptr<OutputFile> out, TarWriterOptions options);
  Status Header(std::string_view name, uint64_t size, char type);
  Status Append(std::string_view data);

  std::unique_ptr<OutputFile> out_;
  TarWriterOptions options_;
  uint64_t bytes_ = 0;
  bool closed_ = false;
};

}  // namespace sluice

#endif  // SLUICE_RECORDS_TAR_WRITER_H_
