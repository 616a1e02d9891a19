// Bad input for the PNG decoder: truncation at every offset, flipped bytes
// (with and without valid CRCs, so damage reaches the inflater and the
// filters), empty input, headers claiming huge images, oversized ancillary
// chunks, bad options. Every outcome must be a decoded image or a clear
// error naming the file. Also run under ASan/UBSan.
#include <gtest/gtest.h>

#include <string>

#include "codec_golden.h"
#include "sluice/core/rng.h"
#include "sluice/ops/png.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using testing::CodecGolden;
using testing::ExpectCleanOutcome;

const char* const kPngs[] = {"rgb8.png",       "rgba16.png",     "gray1.png",
                             "pal8_trns.png",  "pal4_adam7.png", "rgb8_adam7.png",
                             "ga16_adam7.png", "gray4_trns.png", "rgb16_trns.png"};

uint32_t Crc32(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

void PutBigEndian(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>(v >> (24 - 8 * i));
}

// Recomputes every chunk's CRC (so damage reaches past the CRC check).
void FixPngCrcs(std::string* png) {
  size_t pos = 8;
  while (pos + 12 <= png->size()) {
    const uint32_t len =
        static_cast<uint8_t>((*png)[pos]) << 24 | static_cast<uint8_t>((*png)[pos + 1]) << 16 |
        static_cast<uint8_t>((*png)[pos + 2]) << 8 | static_cast<uint8_t>((*png)[pos + 3]);
    if (len > png->size() - pos - 12) return;
    PutBigEndian(png, pos + 8 + len, Crc32(std::string_view(*png).substr(pos + 4, 4 + len)));
    pos += 12 + len;
  }
}

std::string PngClaiming(uint32_t width, uint32_t height) {
  std::string png = CodecGolden::Read("rgb8.png");
  PutBigEndian(&png, 16, width);  // IHDR data starts at 16
  PutBigEndian(&png, 20, height);
  FixPngCrcs(&png);
  return png;
}

TEST(PngCorruption, TruncatedAtEveryOffset) {
  for (const char* file : kPngs) {
    const std::string png = CodecGolden::Read(file);
    DecodePngOptions o8, o16;
    o8.name = o16.name = file;
    o16.bits = 16;
    o16.channels = 4;
    const Tensor full = DecodePng(png, o8).value();
    for (size_t n = 0; n < png.size(); ++n) {
      const std::string_view cut(png.data(), n);
      const std::string context = std::string(file) + " cut at " + std::to_string(n);
      const Result<Tensor> a = DecodePng(cut, o8);
      ExpectCleanOutcome(a, file, context);
      if (a.ok()) {
        EXPECT_TRUE(Identical(*a, full)) << context;
      }
      ExpectCleanOutcome(DecodePng(cut, o16), file, context);
      ExpectCleanOutcome(ReadPngHeader(cut, file), file, context);
    }
  }
}

TEST(PngCorruption, FlippedBytesWithAndWithoutValidCrcs) {
  Rng rng(7);
  for (const char* file : kPngs) {
    const std::string png = CodecGolden::Read(file);
    DecodePngOptions o;
    o.name = file;
    o.max_pixels = 1 << 20;
    for (int trial = 0; trial < 1500; ++trial) {
      std::string bad = png;
      const int flips = 1 + static_cast<int>(rng.UniformInt(3));
      for (int f = 0; f < flips; ++f) {
        bad[8 + rng.UniformInt(bad.size() - 8)] ^= static_cast<char>(1 + rng.UniformInt(255));
      }
      if (trial % 2 == 0) FixPngCrcs(&bad);
      static constexpr int kChannels[] = {0, 1, 3, 4};
      o.channels = kChannels[trial % 4];
      o.bits = trial % 3 == 0 ? 16 : 8;
      ExpectCleanOutcome(DecodePng(bad, o), file, std::string(file) + " " + std::to_string(trial));
    }
  }
}

TEST(PngCorruption, GiantDimensionsAreRejectedBeforeAllocating) {
  DecodePngOptions o;
  o.name = "giant.png";
  SLUICE_EXPECT_ERROR(DecodePng(PngClaiming(60000, 60000), o), StatusCode::kResourceExhausted,
                      "giant.png");
  SLUICE_EXPECT_ERROR(DecodePng(PngClaiming(0x7FFFFFFF, 1), o), StatusCode::kResourceExhausted,
                      "giant.png");
  SLUICE_EXPECT_ERROR(PngOutputShape(PngClaiming(20000, 20000), o), StatusCode::kResourceExhausted,
                      "20000x20000, more than max_pixels");
  SLUICE_ASSERT_OK_AND_ASSIGN(PngHeader h, ReadPngHeader(PngClaiming(60000, 60000)));
  EXPECT_EQ(h.width, 60000);
  // Over PNG's own limit (2^31 - 1): an invalid header.
  SLUICE_EXPECT_ERROR(DecodePng(PngClaiming(0x80000000u, 1), o), StatusCode::kInvalidArgument,
                      "giant.png");
  SLUICE_EXPECT_ERROR(DecodePng(PngClaiming(0, 5), o), StatusCode::kInvalidArgument, "giant.png");
}

TEST(PngCorruption, EmptyNotPngAndBadOptions) {
  DecodePngOptions o;
  o.name = "p.png";
  SLUICE_EXPECT_ERROR(DecodePng("", o), StatusCode::kInvalidArgument, "p.png: empty input");
  SLUICE_EXPECT_ERROR(DecodePng("\xFF\xD8\xFF\xE0 not a png", o), StatusCode::kInvalidArgument,
                      "p.png");
  const std::string png = CodecGolden::Read("rgb8.png");
  o.channels = 2;
  SLUICE_EXPECT_ERROR(DecodePng(png, o), StatusCode::kInvalidArgument,
                      "p.png: channels must be 0, 1, 3 or 4, got 2");
  o.channels = 0;
  o.bits = 12;
  SLUICE_EXPECT_ERROR(DecodePng(png, o), StatusCode::kInvalidArgument, "bits must be 8 or 16");
}

TEST(PngCorruption, OversizedAncillaryChunkIsSkipped) {
  // A 9 MiB tEXt chunk before IDAT: over the 8 MiB chunk cache, so libspng
  // skips it instead of keeping it in memory; the image decodes.
  const std::string png = CodecGolden::Read("rgb8.png");
  std::string text = "Comment";
  text += '\0';
  text += std::string(9 << 20, 'x');
  std::string chunk(4, '\0');
  PutBigEndian(&chunk, 0, static_cast<uint32_t>(text.size()));
  chunk += "tEXt" + text + std::string(4, '\0');
  PutBigEndian(&chunk, chunk.size() - 4, Crc32(std::string_view(chunk).substr(4, 4 + text.size())));
  const std::string big = png.substr(0, 33) + chunk + png.substr(33);  // after IHDR
  DecodePngOptions o;
  o.name = "text.png";
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor a, DecodePng(big, o));
  EXPECT_TRUE(Identical(a, DecodePng(png).value()));
}

}  // namespace
}  // namespace sluice::ops
