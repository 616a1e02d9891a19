// ByteSource: the uncompressed byte stream of a TFRecord file, read in order.
// PlainSource reads the file as is; InflateSource decompresses a zlib or
// gzip stream (several gzip members in a row are one stream). Not
// thread-safe; owned by one reader.
#ifndef SLUICE_RECORDS_INTERNAL_BYTE_SOURCE_H_
#define SLUICE_RECORDS_INTERNAL_BYTE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/core/file.h"
#include "sluice/core/result.h"
#include "sluice/records/compression.h"

namespace sluice::records_internal {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` stream bytes into `dst`; 0 means no more bytes now (the
  // file may still grow). Compressed-stream corruption is DataLoss.
  virtual Result<size_t> Read(uint8_t* dst, size_t n) = 0;
  // Called when Read() returned 0: OK if the stream ended cleanly there,
  // DataLoss if it was cut short (a compressed stream without its end).
  virtual Status CheckCleanEnd() = 0;
  // Moves to uncompressed stream offset `offset` (forward or back).
  virtual Status SeekTo(uint64_t offset) = 0;
  // Where the source stands in the file, for error messages: "" for plain
  // files, ", compressed offset N" for compressed ones.
  virtual std::string Where() const = 0;
};

std::unique_ptr<ByteSource> NewPlainSource(ReadableFile* file);
// REQUIRES: compression is kZlib or kGzip. `buffer_size` bytes of compressed
// input are read at a time.
Result<std::unique_ptr<ByteSource>> NewInflateSource(ReadableFile* file, Compression compression,
                                                     size_t buffer_size);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_BYTE_SOURCE_H_
