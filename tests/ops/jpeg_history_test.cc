// A JPEG decodes the same whatever the thread decoded before. libjpeg keeps
// quantization and Huffman tables across images, so a file that uses a
// table it does not define would otherwise pick up the previous file's
// (jpeg_decode_fuzz found a strict crop failing with "Corrupt JPEG data:
// 15 extraneous bytes before marker 0xc4" on a table the full decode just
// before it had left behind).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "sluice/ops/jpeg.h"

namespace sluice::ops {
namespace {

Tensor Pattern(int64_t h, int64_t w, int seed) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, 3}).value();
  uint8_t* p = t.flat<uint8_t>().data();
  uint32_t s = 99u + static_cast<uint32_t>(seed);
  for (int64_t i = 0; i < h * w * 3; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<uint8_t>((i / 3 % w) * 3 + (s >> 29) * seed);
  }
  return t;
}

// `jpeg` without its marker segments of type `marker` (0xC4 DHT, 0xDB DQT)
// before the first scan: an abbreviated file.
std::string Without(const std::string& jpeg, uint8_t marker) {
  std::string out = jpeg.substr(0, 2);
  size_t i = 2;
  while (i + 4 <= jpeg.size() && static_cast<uint8_t>(jpeg[i]) == 0xFF) {
    const uint8_t m = static_cast<uint8_t>(jpeg[i + 1]);
    const size_t len = static_cast<uint8_t>(jpeg[i + 2]) * 256u + static_cast<uint8_t>(jpeg[i + 3]);
    if (m == 0xDA) break;  // SOS: the rest is the scan and EOI
    if (m != marker) out += jpeg.substr(i, 2 + len);
    i += 2 + len;
  }
  return out + jpeg.substr(i);
}

// Runs fn on a new thread, whose decompressor has seen nothing yet.
template <typename Fn>
auto OnFreshThread(Fn fn) {
  decltype(fn()) result = Status::Internal("not run");
  std::thread([&] { result = fn(); }).join();
  return result;
}

TEST(JpegHistory, HuffmanTablesOfThePreviousImageAreNotUsed) {
  // Without DHT, libjpeg-turbo uses the standard tables, which EncodeJpeg
  // also uses unless optimize_size: the file still decodes to its pixels.
  const std::string plain = EncodeJpeg(Pattern(48, 64, 1), {.quality = 90}).value();
  const std::string abbreviated = Without(plain, 0xC4);
  ASSERT_LT(abbreviated.size(), plain.size());
  const DecodeJpegOptions strict{.strict = true};
  const Result<Tensor> fresh = OnFreshThread([&] { return DecodeJpeg(abbreviated, strict); });
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const Tensor want = DecodeJpeg(plain).value();
  ASSERT_EQ(std::memcmp(fresh->raw_data(), want.raw_data(), want.byte_size()), 0);

  // An image with its own (optimized) Huffman tables, then the abbreviated
  // one, on this thread: full and cropped decodes must not see those tables.
  const std::string optimized =
      EncodeJpeg(Pattern(40, 40, 7), {.quality = 75, .optimize_size = true}).value();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(DecodeJpeg(optimized).ok());
    const Result<Tensor> after = DecodeJpeg(abbreviated, strict);
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ(std::memcmp(after->raw_data(), want.raw_data(), want.byte_size()), 0);
    ASSERT_TRUE(DecodeJpeg(optimized).ok());
    const Result<Tensor> crop = DecodeAndCropJpeg(abbreviated, {17, 9, 20, 30}, strict);
    ASSERT_TRUE(crop.ok()) << crop.status();
    const uint8_t* w = want.flat<uint8_t>().data();
    const uint8_t* c = crop->flat<uint8_t>().data();
    for (int y = 0; y < 20; ++y) {
      ASSERT_EQ(std::memcmp(c + y * 30 * 3, w + ((17 + y) * 64 + 9) * 3, 30 * 3), 0) << y;
    }
  }
}

TEST(JpegHistory, QuantizationTablesOfThePreviousImageAreNotUsed) {
  // Without DQT the file cannot be decoded, whatever came before.
  const std::string plain = EncodeJpeg(Pattern(32, 32, 2)).value();
  const std::string abbreviated = Without(plain, 0xDB);
  ASSERT_LT(abbreviated.size(), plain.size());
  const Result<Tensor> fresh = OnFreshThread([&] { return DecodeJpeg(abbreviated); });
  ASSERT_FALSE(fresh.ok());
  ASSERT_TRUE(DecodeJpeg(plain).ok());
  const Result<Tensor> after = DecodeJpeg(abbreviated);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().message(), fresh.status().message());
  ASSERT_TRUE(JpegOutputShape(plain).ok());
  EXPECT_FALSE(DecodeAndCropJpeg(abbreviated, {0, 0, 8, 8}).ok());
}

}  // namespace
}  // namespace sluice::ops
