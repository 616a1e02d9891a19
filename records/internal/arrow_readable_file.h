// ArrowReadableFile: a core/file.h ReadableFile seen as Arrow's
// arrow::io::RandomAccessFile, so Arrow's readers (libparquet) read through
// sluice's one file layer (paths, file:// and object-store URIs, memory
// files) and never through Arrow's own file systems.
//
// Reads are ReadableFile::ReadAt (positional; safe from several threads at
// once, as Arrow's ReadAt must be); Read/Seek/Tell keep a position of their
// own under a lock. Errors keep the ReadableFile's message (which names
// the file) as an IOError.
//
// Internal to records/ (includes Arrow headers); built only with Arrow.
#ifndef SLUICE_RECORDS_INTERNAL_ARROW_READABLE_FILE_H_
#define SLUICE_RECORDS_INTERNAL_ARROW_READABLE_FILE_H_

#include <arrow/io/interfaces.h>

#include <memory>
#include <mutex>

#include "sluice/core/file.h"

namespace sluice::records_internal {

class ArrowReadableFile final : public arrow::io::RandomAccessFile {
 public:
  // REQUIRES: file != nullptr.
  explicit ArrowReadableFile(std::shared_ptr<ReadableFile> file);

  arrow::Status Close() override;
  bool closed() const override;
  arrow::Result<int64_t> Tell() const override;
  arrow::Status Seek(int64_t position) override;
  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override;
  arrow::Result<int64_t> GetSize() override;
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override;
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, bool allow_short_read,
                                void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes,
                                                       bool allow_short_read) override;

 private:
  // Reads [position, position + nbytes) clipped to the file's end.
  arrow::Result<int64_t> DoReadAt(int64_t position, int64_t nbytes, void* out);

  std::shared_ptr<ReadableFile> file_;
  mutable std::mutex mu_;
  int64_t position_ = 0;
  bool closed_ = false;
};

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_ARROW_READABLE_FILE_H_
