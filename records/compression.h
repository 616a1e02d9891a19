// Compression: how a TFRecord file's byte stream is compressed.
//
// kAuto is for reading only: the reader inspects the first bytes (a valid
// uncompressed TFRecord header, the gzip magic 1f 8b, or a zlib header).
#ifndef SLUICE_RECORDS_COMPRESSION_H_
#define SLUICE_RECORDS_COMPRESSION_H_

#include <string_view>

#include "sluice/core/result.h"

namespace sluice {

enum class Compression { kNone, kZlib, kGzip, kAuto };

// "none", "zlib", "gzip", "auto".
std::string_view CompressionName(Compression c);

// Case-insensitive "none"/"zlib"/"gzip"/"auto", and TensorFlow's spellings
// ("" for none, "ZLIB", "GZIP"). InvalidArgument otherwise.
Result<Compression> ParseCompression(std::string_view name);

// The compression of a stream that starts with `head` (give at least 12
// bytes when the file has them). An empty or unrecognizable head is kNone:
// reading it as uncompressed then reports what is wrong at offset 0.
Compression DetectCompression(std::string_view head);

}  // namespace sluice

#endif  // SLUICE_RECORDS_COMPRESSION_H_
