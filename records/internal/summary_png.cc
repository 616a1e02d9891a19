#include "sluice/records/internal/summary_png.h"

#include <zlib.h>

#include <string_view>
#include <vector>

namespace sluice::records_internal {
namespace {

void PutBigEndian32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

// length, type, data, CRC-32 of type and data (PNG spec, section 5.3).
void PutChunk(std::string_view type, std::string_view data, std::string* out) {
  PutBigEndian32(static_cast<uint32_t>(data.size()), out);
  const size_t start = out->size();
  out->append(type);
  out->append(data);
  const uLong crc = ::crc32(0L, reinterpret_cast<const Bytef*>(out->data() + start),
                            static_cast<uInt>(out->size() - start));
  PutBigEndian32(static_cast<uint32_t>(crc), out);
}

}  // namespace

Result<std::string> SummaryPng(const uint8_t* pixels, int64_t height, int64_t width,
                               int64_t channels) {
  if (height < 1 || width < 1 || height > 0x7fffffff || width > 0x7fffffff || channels < 1 ||
      channels > 4) {
    return Status::InvalidArgument(
        "summary image: need 1..2^31-1 rows and columns and 1..4 "
        "channels, got " +
        std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels));
  }
  static constexpr uint8_t kColorType[5] = {0, 0, 4, 2, 6};  // gray, gray+alpha, RGB, RGBA
  const size_t row = static_cast<size_t>(width * channels);
  // Each row: filter byte 2 ("Up": the difference to the row above).
  std::vector<uint8_t> filtered((row + 1) * static_cast<size_t>(height));
  for (int64_t y = 0; y < height; ++y) {
    uint8_t* dst = filtered.data() + static_cast<size_t>(y) * (row + 1);
    const uint8_t* cur = pixels + static_cast<size_t>(y) * row;
    const uint8_t* above = y > 0 ? cur - row : nullptr;
    dst[0] = 2;
    for (size_t i = 0; i < row; ++i) {
      dst[1 + i] = static_cast<uint8_t>(cur[i] - (above != nullptr ? above[i] : 0));
    }
  }
  uLongf packed_size = ::compressBound(static_cast<uLong>(filtered.size()));
  std::string packed(packed_size, '\0');
  if (::compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, filtered.data(),
                  static_cast<uLong>(filtered.size()), Z_DEFAULT_COMPRESSION) != Z_OK) {
    return Status::ResourceExhausted("summary image: zlib could not compress the pixels");
  }
  packed.resize(packed_size);

  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  PutBigEndian32(static_cast<uint32_t>(width), &ihdr);
  PutBigEndian32(static_cast<uint32_t>(height), &ihdr);
  ihdr.push_back(8);  // bit depth
  ihdr.push_back(static_cast<char>(kColorType[channels]));
  ihdr.append(3, '\0');  // deflate, adaptive filtering, no interlace
  PutChunk("IHDR", ihdr, &png);
  PutChunk("IDAT", packed, &png);
  PutChunk("IEND", {}, &png);
  return png;
}

}  // namespace sluice::records_internal
