#include "sluice/records/compression.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "sluice/records/tfrecord_format.h"

namespace sluice {

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kZlib: return "zlib";
    case Compression::kGzip: return "gzip";
    case Compression::kAuto: return "auto";
  }
  return "invalid";
}

Result<Compression> ParseCompression(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.empty() || lower == "none") return Compression::kNone;
  if (lower == "zlib") return Compression::kZlib;
  if (lower == "gzip") return Compression::kGzip;
  if (lower == "auto") return Compression::kAuto;
  return Status::InvalidArgument("unknown compression '" + std::string(name) +
                                 "'; expected none, zlib, gzip or auto");
}

Compression DetectCompression(std::string_view head) {
  const auto* p = reinterpret_cast<const uint8_t*>(head.data());
  // A valid first record header decides it: uncompressed.
  if (head.size() >= tfrecord::kHeaderSize && tfrecord::HeaderChecksumOk(p)) {
    return Compression::kNone;
  }
  if (head.size() >= 2 && p[0] == 0x1f && p[1] == 0x8b) return Compression::kGzip;
  // zlib (RFC 1950): method 8 (deflate), window <= 32 KiB, header check bits.
  if (head.size() >= 2 && (p[0] & 0x0f) == 8 && (p[0] >> 4) <= 7 &&
      ((p[0] << 8) | p[1]) % 31 == 0) {
    return Compression::kZlib;
  }
  return Compression::kNone;
}

}  // namespace sluice
