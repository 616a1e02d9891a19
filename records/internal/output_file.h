// OutputFile: a file written in one go and published atomically.
//
// In atomic mode (the default) bytes go to a hidden temporary file beside the
// target (".<name>.tmp-XXXXXX", which globs like "train-*" do not match) and
// Commit() renames it over the target, so readers see either the old file or
// the complete new one, never a partial write. Destroying an OutputFile that
// was not committed removes the temporary file. Not thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_OUTPUT_FILE_H_
#define SLUICE_RECORDS_INTERNAL_OUTPUT_FILE_H_

#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice::records_internal {

struct OutputFileOptions {
  bool atomic = true;  // write under a temporary name, rename on Commit()
  bool sync = false;   // fsync the file (and after the rename its directory) in Commit()
};

class OutputFile {
 public:
  static Result<std::unique_ptr<OutputFile>> Create(const std::string& path,
                                                    const OutputFileOptions& options);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  Status Append(std::string_view data);
  // fsync now (for callers that flush periodically).
  Status Sync();
  // Closes (after fsync if options.sync) and, in atomic mode, renames the
  // temporary file to the target. On failure the temporary file is removed.
  Status Commit();
  // Removes the temporary file (atomic mode) without publishing it.
  void Abandon();

  const std::string& path() const { return path_; }
  // Where bytes are being written now (the temporary name in atomic mode).
  const std::string& write_path() const { return write_path_; }

 private:
  OutputFile(std::string path, std::string write_path, int fd, OutputFileOptions options);
  Status Error(std::string_view what, int err);

  std::string path_;
  std::string write_path_;
  int fd_;
  OutputFileOptions options_;
  bool done_ = false;
};

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_OUTPUT_FILE_H_
