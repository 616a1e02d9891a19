// ReadableFile: bytes read at offsets, from a POSIX file or from memory.
//
// The record readers read through this interface, so tests and fuzzers can
// feed them bytes without touching the disk. A file may grow while it is
// read (a TFRecord still being written); Size() reports the current size.
//
// Thread-safety: implementations here allow concurrent ReadAt() calls.
#ifndef SLUICE_RECORDS_FILE_H_
#define SLUICE_RECORDS_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/core/result.h"

namespace sluice {

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;

  // Reads up to `n` bytes at `offset` into `dst`, returning how many were
  // read: fewer than `n` only at the end of the file, 0 at or past it.
  virtual Result<size_t> ReadAt(uint64_t offset, void* dst, size_t n) = 0;
  // The file's current size in bytes.
  virtual Result<uint64_t> Size() = 0;
  // The name used in error messages (the path for POSIX files).
  virtual const std::string& name() const = 0;
  // Hints that the file will be read sequentially from the start.
  virtual void AdviseSequential() {}
};

// Opens `path` for reading. NotFound if it does not exist; other failures
// carry the OS error text.
Result<std::unique_ptr<ReadableFile>> OpenReadableFile(const std::string& path);

// A file whose bytes are `contents`, reported under `name`.
std::unique_ptr<ReadableFile> NewMemoryFile(std::string name, std::string contents);

}  // namespace sluice

#endif  // SLUICE_RECORDS_FILE_H_
