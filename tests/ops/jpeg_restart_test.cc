// AddJpegRestartMarkers and HasRowAlignedRestarts (ops/jpeg_restart.h), and
// EncodeJpegOptions::restart_interval: decoded pixels identical to the
// input's, the DRI value and the RSTn markers in the entropy-coded data
// (parsed here byte by byte), APPn/COM markers kept once, clear errors for
// bad input, deterministic output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "codec_golden.h"
#include "sluice/core/rng.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/jpeg_restart.h"
#include "sluice/ops/png.h"
#include "test_util.h"

namespace sluice::ops {
namespace {

using testing::CodecGolden;
using testing::ExpectCleanOutcome;
using testing::JpegClaiming;

// --- What the bytes say ------------------------------------------------------

struct Segment {
  uint8_t code;
  std::string payload;
};

// A JPEG's structure, read without libjpeg.
struct JpegLayout {
  bool valid = false;
  std::vector<Segment> segments;  // every marker segment outside the scans, in order
  uint8_t sof = 0;                // C0 (baseline), C1, C2 (progressive), C9 (arithmetic)...
  int64_t width = 0, height = 0;
  std::vector<std::pair<int, int>> sampling;  // (h, v) per component
  int64_t dri = -1;                           // the last DRI's value, -1 if none
  int scans = 0;
  std::vector<uint8_t> rst;  // the RSTn marker codes in the entropy-coded data, in order
  bool eoi = false;

  int Count(uint8_t code) const {
    return static_cast<int>(std::count_if(segments.begin(), segments.end(),
                                          [code](const Segment& s) { return s.code == code; }));
  }
  int64_t McusPerRow() const {
    if (sampling.size() == 1) return (width + 7) / 8;
    int h = 1;
    for (auto [sh, sv] : sampling) h = std::max(h, sh);
    return (width + 8 * h - 1) / (8 * h);
  }
  int64_t McuRows() const {
    if (sampling.size() == 1) return (height + 7) / 8;
    int v = 1;
    for (auto [sh, sv] : sampling) v = std::max(v, sv);
    return (height + 8 * v - 1) / (8 * v);
  }
};

int Be16(std::string_view b, size_t at) {
  return static_cast<uint8_t>(b[at]) << 8 | static_cast<uint8_t>(b[at + 1]);
}

JpegLayout Parse(std::string_view b) {
  JpegLayout j;
  if (b.size() < 4 || static_cast<uint8_t>(b[0]) != 0xFF || static_cast<uint8_t>(b[1]) != 0xD8) {
    return j;
  }
  size_t pos = 2;
  while (pos + 1 < b.size()) {
    if (static_cast<uint8_t>(b[pos]) != 0xFF) return j;
    const uint8_t code = static_cast<uint8_t>(b[pos + 1]);
    if (code == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (code == 0xD9) {
      j.eoi = true;
      j.valid = true;
      return j;
    }
    if (pos + 4 > b.size()) return j;
    const size_t length = static_cast<size_t>(Be16(b, pos + 2));
    if (length < 2 || pos + 2 + length > b.size()) return j;
    const std::string_view payload = b.substr(pos + 4, length - 2);
    j.segments.push_back({code, std::string(payload)});
    if (code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC) {
      j.sof = code;
      j.height = Be16(payload, 1);
      j.width = Be16(payload, 3);
      const int n = static_cast<uint8_t>(payload[5]);
      for (int c = 0; c < n; ++c) {
        const uint8_t hv = static_cast<uint8_t>(payload[6 + 3 * c + 1]);
        j.sampling.emplace_back(hv >> 4, hv & 15);
      }
    } else if (code == 0xDD) {
      j.dri = Be16(payload, 0);
    }
    pos += 2 + length;
    if (code != 0xDA) continue;
    ++j.scans;
    // Entropy-coded data: FF 00 is a stuffed FF, FF D0..D7 a restart marker,
    // FF FF fill; any other FF xx ends the scan.
    while (pos + 1 < b.size()) {
      if (static_cast<uint8_t>(b[pos]) != 0xFF) {
        ++pos;
        continue;
      }
      const uint8_t next = static_cast<uint8_t>(b[pos + 1]);
      if (next == 0x00) {
        pos += 2;
      } else if (next >= 0xD0 && next <= 0xD7) {
        j.rst.push_back(next);
        pos += 2;
      } else if (next == 0xFF) {
        ++pos;
      } else {
        break;
      }
    }
  }
  return j;
}

// The output of a transcode (or an encode) with a wanted `interval`: one
// Huffman-coded sequential scan (`single_scan`), a DRI of
// JpegRestartInterval(MCUs per row, interval), which lands on MCU row
// starts, and RST0, RST1, ... RST7, RST0 ... between its segments.
void ExpectRestarts(std::string_view jpeg, int interval, bool single_scan = true) {
  const JpegLayout j = Parse(jpeg);
  ASSERT_TRUE(j.valid && j.eoi);
  const int64_t per_row = j.McusPerRow();
  const int64_t want = JpegRestartInterval(per_row, interval);
  EXPECT_EQ(j.dri, want) << "MCUs per row " << per_row << ", interval " << interval;
  EXPECT_EQ(j.Count(0xDD), 1);
  EXPECT_LE(want, std::max<int64_t>(interval, 1));
  EXPECT_TRUE(per_row % want == 0 || want % per_row == 0) << per_row << " " << want;
  if (!single_scan) return;
  EXPECT_TRUE(j.sof == 0xC0 || j.sof == 0xC1) << int{j.sof};
  EXPECT_EQ(j.scans, 1);
  const int64_t total = per_row * j.McuRows();
  ASSERT_EQ(static_cast<int64_t>(j.rst.size()), (total + want - 1) / want - 1)
      << j.width << "x" << j.height << ", interval " << want;
  for (size_t i = 0; i < j.rst.size(); ++i) {
    ASSERT_EQ(j.rst[i], 0xD0 + i % 8) << i;
  }
}

// --- Images ------------------------------------------------------------------

// Smooth shading, a hard edge and noise: photo-like, so every coefficient
// band is used.
Tensor Photo(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{h, w, c}).value();
  auto px = t.flat<uint8_t>();
  Rng rng(seed);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        double v = 128 + 90 * std::sin(0.05 * x + 0.3 * k) * std::cos(0.04 * y);
        if ((x + 2 * y) % 53 < 7) v = 30 + 60 * k;
        v += rng.Normal() * 8;
        px[(y * w + x) * c + k] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return t;
}

std::string Encode(int64_t h, int64_t w, int64_t c, bool chroma, bool progressive,
                   int restart_interval = 0) {
  EncodeJpegOptions o;
  o.quality = 90;
  o.chroma_downsampling = chroma;
  o.progressive = progressive;
  o.restart_interval = restart_interval;
  return EncodeJpeg(Photo(h, w, c, static_cast<uint64_t>(h * 1000 + w)), o).value();
}

// Decodes of `a` and `b` are identical with each of `options`.
void ExpectSamePixels(std::string_view a, std::string_view b, const std::string& context,
                      std::vector<DecodeJpegOptions> options = {}) {
  if (options.empty()) {
    DecodeJpegOptions fast, accurate;
    accurate.dct_method = JpegDctMethod::kIntegerAccurate;
    options = {fast, accurate};
  }
  for (const DecodeJpegOptions& o : options) {
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, DecodeJpeg(a, o));
    SLUICE_ASSERT_OK_AND_ASSIGN(Tensor y, DecodeJpeg(b, o));
    EXPECT_TRUE(Identical(x, y)) << context << ": channels " << o.channels << ", ratio " << o.ratio
                                 << ", max diff " << testing::MaxAbsDiff(x, y);
  }
}

std::string Transcode(std::string_view jpeg, int interval, std::string_view name = "in.jpg") {
  JpegRestartOptions o;
  o.interval = interval;
  o.name = name;
  Result<std::string> out = AddJpegRestartMarkers(jpeg, o);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::string();
}

// Small files libjpeg-turbo's compressor wrote (24x16 RGB, quality 75) that
// EncodeJpeg cannot: arithmetic-coded, and sequential with one scan per
// component (optimized Huffman tables). Made by a 40-line program on
// jpeg_set_defaults + arith_code / a scan script; kept here as bytes.
const std::string& ArithmeticJpeg() {
  static const std::string* bytes = new std::string(
      "\xff\xd8\xff\xe0\x00\x10\x4a\x46\x49\x46\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
      "\xff\xdb\x00\x43\x00\x08\x06\x06\x07\x06\x05\x08\x07\x07\x07\x09\x09\x08\x0a\x0c"
      "\x14\x0d\x0c\x0b\x0b\x0c\x19\x12\x13\x0f\x14\x1d\x1a\x1f\x1e\x1d\x1a\x1c\x1c\x20"
      "\x24\x2e\x27\x20\x22\x2c\x23\x1c\x1c\x28\x37\x29\x2c\x30\x31\x34\x34\x34\x1f\x27"
      "\x39\x3d\x38\x32\x3c\x2e\x33\x34\x32\xff\xdb\x00\x43\x01\x09\x09\x09\x0c\x0b\x0c"
      "\x18\x0d\x0d\x18\x32\x21\x1c\x21\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32"
      "\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32"
      "\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\xff\xc9"
      "\x00\x11\x08\x00\x10\x00\x18\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01\xff\xcc\x00"
      "\x0a\x00\x10\x10\x05\x01\x10\x11\x05\xff\xda\x00\x0c\x03\x01\x00\x02\x11\x03\x11"
      "\x00\x3f\x00\xff\x00\xb5\x9c\x41\xe8\x43\xa9\x90\x53\xde\xa3\xff\x00\xc7\x76\x1a"
      "\x9f\xbd\x1c\x4a\x90\x6c\xb5\xa0\x43\xa9\x0b\x50\xaf\xf0\x6b\x55\xeb\xd8\xbf\x08"
      "\xc7\x01\xa1\xa5\x6c\x52\xff\x00\x86\x9f\x00\xb2\x28\xe1\xa9\x5c\x15\x64\x59\x8a"
      "\x7d\x34\xc8\xae\xe1\x7e\xf0\xe6\xbd\xfe\xbf\x39\xef\x53\xf6\x09\xd4\x97\x8d\xa8"
      "\xa0\x92\xf6\x44\xd0\x3e\x5c\x2a\xeb\xe6\x73\x1c\x47\xfa\x57\x0c\x16\xd3\xed\x96"
      "\x80\xff\xd9",
      303);
  return *bytes;
}

const std::string& ThreeScanJpeg() {
  static const std::string* bytes = new std::string(
      "\xff\xd8\xff\xe0\x00\x10\x4a\x46\x49\x46\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
      "\xff\xdb\x00\x43\x00\x08\x06\x06\x07\x06\x05\x08\x07\x07\x07\x09\x09\x08\x0a\x0c"
      "\x14\x0d\x0c\x0b\x0b\x0c\x19\x12\x13\x0f\x14\x1d\x1a\x1f\x1e\x1d\x1a\x1c\x1c\x20"
      "\x24\x2e\x27\x20\x22\x2c\x23\x1c\x1c\x28\x37\x29\x2c\x30\x31\x34\x34\x34\x1f\x27"
      "\x39\x3d\x38\x32\x3c\x2e\x33\x34\x32\xff\xdb\x00\x43\x01\x09\x09\x09\x0c\x0b\x0c"
      "\x18\x0d\x0d\x18\x32\x21\x1c\x21\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32"
      "\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32"
      "\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\x32\xff\xc0"
      "\x00\x11\x08\x00\x10\x00\x18\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01\xff\xc4\x00"
      "\x15\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x07"
      "\xff\xc4\x00\x1b\x10\x00\x01\x04\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x12\x00\x04\x05\x11\x14\x22\x81\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00\x9b"
      "\x36\x84\xc5\xad\x48\xb8\x98\x6d\x09\x8b\x5a\x91\x71\x30\xda\x13\x16\xb5\x22\xe2"
      "\x59\xb4\x26\x2d\x68\x45\xc4\xc3\x68\x4c\x5a\xd0\x8b\x94\x98\x6d\x09\x8b\x5a\x91"
      "\x71\x7f\xff\xc4\x00\x15\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x04\x05\xff\xc4\x00\x22\x11\x00\x01\x02\x04\x07\x01\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x13\x11\x12\x00\x05\x41\x81\x01\x02\x03\x31\x42\x82\xa2"
      "\xb2\xff\xda\x00\x08\x01\x02\x11\x00\x3f\x00\x4e\xbc\xd0\x75\x63\x2e\x35\xfb\x7f"
      "\x98\x95\x9e\x76\x0c\x46\x61\x27\x16\xb9\x3b\x55\x77\xba\x47\xff\xc4\x00\x15\x01"
      "\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x06\xff\xc4"
      "\x00\x1c\x11\x00\x01\x03\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05"
      "\x00\x01\x11\x03\x04\x21\x31\xe1\xff\xda\x00\x08\x01\x03\x11\x00\x3f\x00\x38\x59"
      "\x99\x8c\xf5\x5e\xdb\x18\x9a\x6c\xfb\x5f\xff\xd9",
      452);
  return *bytes;
}

const char* const kGoldenJpegs[] = {"rgb420_q90.jpg", "rgb420_q95.jpg",  "rgb444_q90.jpg",
                                    "gray_q90.jpg",   "rgb420_prog.jpg", "big420_q85.jpg",
                                    "rgb422.jpg",     "rgb440.jpg",      "rgb411.jpg",
                                    "cmyk_adobe.jpg", "cmyk_plain.jpg",  "ycck_adobe.jpg"};

// --- AddJpegRestartMarkers -----------------------------------------------------

TEST(AddJpegRestartMarkers, PixelsIdenticalForEncodedImages) {
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1}, {9, 17}, {16, 16}, {33, 65}, {377, 501}};
  for (auto [h, w] : sizes) {
    for (int color = 0; color < 3; ++color) {  // gray, 4:2:0, 4:4:4
      for (bool progressive : {false, true}) {
        const std::string in = Encode(h, w, color == 0 ? 1 : 3, color == 1, progressive);
        for (int interval : {1, 2, 4, 65535}) {
          const std::string context = std::to_string(w) + "x" + std::to_string(h) + " color " +
                                      std::to_string(color) + (progressive ? " progressive" : "") +
                                      " interval " + std::to_string(interval);
          SCOPED_TRACE(context);
          const std::string out = Transcode(in, interval);
          ExpectRestarts(out, interval);
          ExpectSamePixels(in, out, context);
        }
      }
    }
  }
}

TEST(AddJpegRestartMarkers, PixelsIdenticalForEveryGoldenFile) {
  // Every sampling (4:1:1, 4:2:2, 4:4:0 ...), CMYK with and without an
  // Adobe marker, YCCK, progressive; every decode option that could tell.
  std::vector<DecodeJpegOptions> options;
  for (int channels : {0, 1, 3}) {
    for (auto dct : {JpegDctMethod::kIntegerFast, JpegDctMethod::kIntegerAccurate}) {
      for (int ratio : {1, 2, 8}) {
        DecodeJpegOptions o;
        o.channels = channels;
        o.dct_method = dct;
        o.ratio = ratio;
        options.push_back(o);
      }
    }
  }
  DecodeJpegOptions blocky;
  blocky.fancy_upscaling = false;
  options.push_back(blocky);
  for (const char* file : kGoldenJpegs) {
    const std::string in = CodecGolden::Read(file);
    for (int interval : {1, 3}) {
      const std::string context = std::string(file) + " interval " + std::to_string(interval);
      SCOPED_TRACE(context);
      const std::string out = Transcode(in, interval, file);
      ExpectRestarts(out, interval);
      ExpectSamePixels(in, out, context, options);
      SLUICE_ASSERT_OK_AND_ASSIGN(JpegHeader a, ReadJpegHeader(in));
      SLUICE_ASSERT_OK_AND_ASSIGN(JpegHeader b, ReadJpegHeader(out));
      EXPECT_EQ(a.color_space, b.color_space);
      EXPECT_EQ(a.subsampling, b.subsampling);
      EXPECT_FALSE(b.progressive);
      // Crops too (they take other paths through libjpeg).
      const JpegCropWindow window{a.height / 3, a.width / 4, a.height / 2, a.width / 2};
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor x, DecodeAndCropJpeg(in, window));
      SLUICE_ASSERT_OK_AND_ASSIGN(Tensor y, DecodeAndCropJpeg(out, window));
      EXPECT_TRUE(Identical(x, y));
    }
  }
}

TEST(AddJpegRestartMarkers, ArithmeticAndMultiScanSequentialInput) {
  for (const std::string* in : {&ArithmeticJpeg(), &ThreeScanJpeg()}) {
    const JpegLayout before = Parse(*in);
    ASSERT_TRUE(before.valid);
    SLUICE_ASSERT_OK_AND_ASSIGN(JpegHeader h, ReadJpegHeader(*in));
    EXPECT_EQ(h.arithmetic, in == &ArithmeticJpeg());
    EXPECT_EQ(before.scans, in == &ArithmeticJpeg() ? 1 : 3);
    const std::string out = Transcode(*in, 1);
    ExpectRestarts(out, 1);  // Huffman-coded, one scan
    ExpectSamePixels(*in, out, in == &ArithmeticJpeg() ? "arithmetic" : "three scans");
  }
  // Without its last scan (Cr), the three-scan file still decodes (Cr
  // blank), but it is not transcoded.
  const std::string& three = ThreeScanJpeg();
  const std::string two = three.substr(0, three.rfind("\xFF\xDA")) + "\xFF\xD9";
  SLUICE_EXPECT_OK(DecodeJpeg(two));
  JpegRestartOptions o;
  o.name = "two_scans.jpg";
  SLUICE_EXPECT_ERROR(AddJpegRestartMarkers(two, o), StatusCode::kInvalidArgument,
                      "add_jpeg_restart_markers: two_scans.jpg: a component is never coded");
}

// `jpeg` with `segments` inserted after its first marker segment (JFIF APP0
// for EncodeJpeg's files), or right after SOI when `after_app0` is false.
std::string WithSegments(const std::string& jpeg, const std::vector<Segment>& segments,
                         bool after_app0 = true) {
  const size_t at = after_app0 ? 4 + static_cast<size_t>(Be16(jpeg, 4)) : 2;
  std::string extra;
  for (const Segment& s : segments) {
    extra += '\xFF';
    extra += static_cast<char>(s.code);
    extra += static_cast<char>((s.payload.size() + 2) >> 8);
    extra += static_cast<char>((s.payload.size() + 2) & 0xFF);
    extra += s.payload;
  }
  return jpeg.substr(0, at) + extra + jpeg.substr(at);
}

std::vector<Segment> AppAndCom(const JpegLayout& j) {
  std::vector<Segment> out;
  for (const Segment& s : j.segments) {
    if ((s.code >= 0xE0 && s.code <= 0xEF) || s.code == 0xFE) out.push_back(s);
  }
  return out;
}

bool operator==(const Segment& a, const Segment& b) {
  return a.code == b.code && a.payload == b.payload;
}

TEST(AddJpegRestartMarkers, KeepsAppAndComMarkersOnce) {
  const std::string base = Encode(24, 40, 3, true, false);
  const Segment jfif = AppAndCom(Parse(base)).at(0);
  ASSERT_EQ(jfif.payload.substr(0, 5), std::string("JFIF\0", 5));
  const std::vector<Segment> extra = {
      {0xE1, std::string("Exif\0\0II*\0\x08\0\0\0\0\0", 16)},
      {0xE2, std::string("ICC_PROFILE\0\x01\x01", 14) + std::string(40, '\x07')},
      {0xFE, "made by a test"},
      {0xED, std::string("Photoshop 3.0\0", 14) + "8BIM"},
      {0xE1, "http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>"},
  };
  const std::string in = WithSegments(base, extra);
  const std::string out = Transcode(in, 2);
  ExpectSamePixels(in, out, "with markers");
  std::vector<Segment> want = {jfif};  // the encoder's, with the input's version and density
  want.insert(want.end(), extra.begin(), extra.end());
  EXPECT_EQ(AppAndCom(Parse(out)), want);

  JpegRestartOptions drop;
  drop.copy_markers = false;
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string bare, AddJpegRestartMarkers(in, drop));
  EXPECT_EQ(AppAndCom(Parse(bare)), std::vector<Segment>{jfif});
  EXPECT_LT(bare.size(), out.size());

  // No JFIF marker in the input (a camera's Exif-only file): the output
  // gets the encoder's one, and the Exif after it.
  const std::string no_jfif = WithSegments(base.substr(0, 2) + base.substr(4 + Be16(base, 4)),
                                           {extra[0]}, /*after_app0=*/false);
  ASSERT_EQ(Parse(no_jfif).Count(0xE0), 0);
  const std::string out2 = Transcode(no_jfif, 1);
  const std::vector<Segment> got = AppAndCom(Parse(out2));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].code, 0xE0);
  EXPECT_EQ(got[1], extra[0]);
  ExpectSamePixels(no_jfif, out2, "no JFIF");

  // Adobe APP14: one, whether the encoder writes it (CMYK, YCCK) or the
  // input's is copied; none for a CMYK file that had none.
  for (const char* file : {"cmyk_adobe.jpg", "ycck_adobe.jpg", "cmyk_plain.jpg"}) {
    const std::string cmyk = CodecGolden::Read(file);
    const JpegLayout a = Parse(cmyk), b = Parse(Transcode(cmyk, 1));
    EXPECT_EQ(a.Count(0xEE), std::string(file) == "cmyk_plain.jpg" ? 0 : 1) << file;
    EXPECT_EQ(b.Count(0xEE), a.Count(0xEE)) << file;
    EXPECT_EQ(b.Count(0xE0), a.Count(0xE0)) << file;
  }
}

TEST(AddJpegRestartMarkers, DeterministicAndThreadSafe) {
  std::vector<std::string> inputs;
  for (const char* file : kGoldenJpegs) inputs.push_back(CodecGolden::Read(file));
  inputs.push_back(Encode(377, 501, 3, true, true));
  std::vector<std::string> want;
  for (const std::string& in : inputs) want.push_back(Transcode(in, 2));
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(Transcode(inputs[i], 2), want[i]) << i;
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      JpegRestartOptions o;
      o.interval = 2;
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < inputs.size(); ++i) {
          const size_t k = (i + t) % inputs.size();
          Result<std::string> out = AddJpegRestartMarkers(inputs[k], o);
          if (!out.ok() || *out != want[k]) ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(AddJpegRestartMarkers, OptimizedTablesAreSmallerThanStandardOnes) {
  const std::string in = CodecGolden::Read("big420_q85.jpg");
  JpegRestartOptions standard;
  standard.optimize_huffman = false;
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string plain, AddJpegRestartMarkers(in, standard));
  const std::string optimized = Transcode(in, 1);
  ExpectRestarts(plain, 1);
  ExpectSamePixels(in, plain, "standard tables");
  EXPECT_LT(optimized.size(), plain.size());
}

// Where the entropy-coded data of the first scan ends (the next marker).
size_t EndOfFirstScan(std::string_view jpeg) {
  size_t pos = jpeg.find("\xFF\xDA");
  pos += 2 + static_cast<size_t>(Be16(jpeg, pos + 2));
  while (pos + 1 < jpeg.size()) {
    const uint8_t next = static_cast<uint8_t>(jpeg[pos + 1]);
    if (static_cast<uint8_t>(jpeg[pos]) == 0xFF && next != 0 && (next < 0xD0 || next > 0xD7)) {
      break;
    }
    ++pos;
  }
  return pos;
}

TEST(AddJpegRestartMarkers, BadInputIsAClearError) {
  JpegRestartOptions o;
  o.name = "bad.jpg";
  const auto expect = [&](std::string_view bytes, StatusCode code, const std::string& text) {
    SLUICE_EXPECT_ERROR(AddJpegRestartMarkers(bytes, o), code, "add_jpeg_restart_markers: bad.jpg");
    SLUICE_EXPECT_ERROR(AddJpegRestartMarkers(bytes, o), code, text);
  };
  expect("", StatusCode::kInvalidArgument, "empty input");
  expect("this is not a JPEG", StatusCode::kInvalidArgument, "Not a JPEG file");
  const std::string png = EncodePng(Photo(4, 4, 3, 1)).value();
  expect(png, StatusCode::kInvalidArgument, "Not a JPEG file");
  expect(JpegClaiming(60000, 60000), StatusCode::kResourceExhausted, "max_pixels");
  // Within max_pixels, but more blocks than 1,500 bytes can code: refused
  // before anything image-sized is allocated.
  expect(JpegClaiming(4000, 3000), StatusCode::kInvalidArgument, "more than");

  std::string twelve = CodecGolden::Read("rgb420_q90.jpg");
  const size_t sof = twelve.find("\xFF\xC0");
  twelve[sof + 1] = static_cast<char>(0xC1);
  twelve[sof + 4] = 12;
  expect(twelve, StatusCode::kInvalidArgument, "precision 12");

  // Data that a decoder papers over: libjpeg warns and carries on, not
  // here. Ones in the scan (FF 00 is a stuffed FF) make a bad Huffman code;
  // a marker inside it ends its data early.
  const std::string big = CodecGolden::Read("big420_q85.jpg");
  std::string ones = big;
  const size_t sos = ones.find("\xFF\xDA");
  for (size_t i = sos + 200; i < sos + 240; i += 2) {
    ones[i] = '\xFF';
    ones[i + 1] = '\0';
  }
  SLUICE_EXPECT_OK(DecodeJpeg(ones));
  expect(ones, StatusCode::kInvalidArgument, "Corrupt JPEG data: bad Huffman code");
  std::string early = big;
  early.replace(sos + 300, 2, "\xFF\xD9");
  SLUICE_EXPECT_OK(DecodeJpeg(early));
  expect(early, StatusCode::kInvalidArgument,
         "Corrupt JPEG data: premature end of data segment (a decoder would make up pixels");
  // A progressive file whose later scans are missing (EOI after its DC
  // scan): libjpeg smooths the blocks when decoding.
  const std::string prog = CodecGolden::Read("rgb420_prog.jpg");
  const std::string dc_only = prog.substr(0, EndOfFirstScan(prog)) + "\xFF\xD9";
  SLUICE_EXPECT_OK(DecodeJpeg(dc_only));
  expect(dc_only, StatusCode::kInvalidArgument, "incomplete");
  // 600 scans (the limit is 500): the three-scan file's last scan repeated.
  const std::string& three = ThreeScanJpeg();
  const size_t last = three.rfind("\xFF\xDA");
  std::string many = three.substr(0, three.size() - 2);
  for (int i = 0; i < 600; ++i) many += three.substr(last, three.size() - 2 - last);
  many += "\xFF\xD9";
  expect(many, StatusCode::kInvalidArgument, "too many scans");

  o.interval = 0;
  expect(big, StatusCode::kInvalidArgument, "interval must be in [1, 65535], got 0");
  o.interval = 65536;
  expect(big, StatusCode::kInvalidArgument, "interval");
  o.interval = 1;
  o.max_pixels = 0;
  expect(big, StatusCode::kInvalidArgument, "max_pixels");
  o.max_pixels = 1000;
  expect(big, StatusCode::kResourceExhausted, "max_pixels");
}

TEST(AddJpegRestartMarkers, OutOfRangeCoefficientsAreAnError) {
  // Found by jpeg_restart_fuzz: an arithmetic-coded file whose (corrupt)
  // data decodes to coefficients 8-bit Huffman coding cannot represent.
  // libjpeg's SIMD encoder with the standard tables wrote them as an invalid
  // stream; now both table choices refuse. (The fuzz input's first byte is
  // its option byte.)
  const std::string input = testing::ReadFileOrDie(
      testing::TestDataPath("../fuzz/corpus/jpeg_restart/regression-out-of-range-coefficient"));
  const std::string jpeg = input.substr(1);
  SLUICE_EXPECT_OK(DecodeJpeg(jpeg));
  for (bool optimize : {false, true}) {
    JpegRestartOptions o;
    o.interval = 16;
    o.optimize_huffman = optimize;
    o.name = "range.jpg";
    SLUICE_EXPECT_ERROR(AddJpegRestartMarkers(jpeg, o), StatusCode::kInvalidArgument,
                        "range.jpg: a DCT coefficient is out of the range of 8-bit JPEG");
  }
}

TEST(AddJpegRestartMarkers, TruncatedAtEveryOffsetIsAnError) {
  // No recovery: a file cut anywhere, even just before or inside its EOI,
  // is refused (libjpeg's bit reader wants bytes past the last code).
  for (const std::string& jpeg :
       {Encode(9, 17, 3, true, false), Encode(9, 17, 3, true, true),
        Encode(20, 30, 1, false, false), CodecGolden::Read("rgb420_prog.jpg"),
        CodecGolden::Read("cmyk_adobe.jpg")}) {
    JpegRestartOptions o;
    o.name = "cut.jpg";
    SLUICE_ASSERT_OK(AddJpegRestartMarkers(jpeg, o));
    for (size_t n = 0; n < jpeg.size(); ++n) {
      const Result<std::string> r = AddJpegRestartMarkers(std::string_view(jpeg).substr(0, n), o);
      ASSERT_FALSE(r.ok()) << "cut at " << n << " of " << jpeg.size();
      ExpectCleanOutcome(r, "cut.jpg", "cut at " + std::to_string(n));
    }
  }
}

TEST(AddJpegRestartMarkers, HarmlessOdditiesAreAccepted) {
  // Bytes between the scan and EOI ("extraneous bytes before marker"),
  // which strict decoding refuses, lose nothing: transcoded, same pixels.
  const std::string big = CodecGolden::Read("big420_q85.jpg");
  const std::string junk = big.substr(0, big.size() - 2) + "abc" + big.substr(big.size() - 2);
  DecodeJpegOptions strict;
  strict.strict = true;
  EXPECT_FALSE(DecodeJpeg(junk, strict).ok());
  const std::string out = Transcode(junk, 4);
  ExpectSamePixels(junk, out, "junk before EOI");
  SLUICE_EXPECT_OK(DecodeJpeg(out, strict));
  // Trailing bytes after EOI are never read.
  EXPECT_EQ(Transcode(big + "trailing", 4), Transcode(big, 4));
}

TEST(AddJpegRestartMarkers, FlippedBytesNeverCrash) {
  // Whatever a flipped byte does, the outcome is a clear error or a file
  // with the pixels libjpeg decodes from the damaged input.
  const std::string jpeg = CodecGolden::Read("rgb420_q90.jpg");
  Rng rng(7);
  JpegRestartOptions o;
  o.name = "flip.jpg";
  int transcoded = 0;
  for (int i = 0; i < 400; ++i) {
    std::string bad = jpeg;
    bad[rng.UniformInt(bad.size())] ^= static_cast<char>(1 + rng.UniformInt(255));
    const Result<std::string> r = AddJpegRestartMarkers(bad, o);
    ExpectCleanOutcome(r, "flip.jpg", "flip " + std::to_string(i));
    if (!r.ok()) continue;
    ++transcoded;
    DecodeJpegOptions strict;
    strict.strict = true;
    if (DecodeJpeg(bad, strict).ok()) ExpectSamePixels(bad, *r, "flip " + std::to_string(i));
  }
  EXPECT_GT(transcoded, 0);
}

// --- HasRowAlignedRestarts --------------------------------------------------------

TEST(HasRowAlignedRestarts, AgreesWithTheCropDecoder) {
  const std::string plain = Encode(40, 72, 3, true, false);
  EXPECT_FALSE(HasRowAlignedRestarts(plain).value());
  EXPECT_TRUE(HasRowAlignedRestarts(Transcode(plain, 3)).value());
  EXPECT_TRUE(HasRowAlignedRestarts(Encode(40, 72, 3, true, false, 2)).value());
  EXPECT_TRUE(HasRowAlignedRestarts(Encode(40, 72, 1, false, false, 100)).value());
  // Progressive files have many scans; a restart interval of 4 MCUs on
  // rows of 5 MCUs (72 / 16) straddles rows.
  EXPECT_FALSE(HasRowAlignedRestarts(Encode(40, 72, 3, true, true, 1)).value());
  std::string straddling = Transcode(plain, 5);
  JpegLayout j = Parse(straddling);
  ASSERT_EQ(j.dri, 5);
  const size_t dri = straddling.find("\xFF\xDD");
  straddling[dri + 5] = 4;
  EXPECT_FALSE(HasRowAlignedRestarts(straddling).value());
  EXPECT_FALSE(HasRowAlignedRestarts(ArithmeticJpeg()).value());
  EXPECT_FALSE(HasRowAlignedRestarts(ThreeScanJpeg()).value());
  SLUICE_EXPECT_ERROR(HasRowAlignedRestarts("GIF89a", "x.gif"), StatusCode::kInvalidArgument,
                      "has_row_aligned_restarts: x.gif");
  SLUICE_EXPECT_ERROR(HasRowAlignedRestarts("", "e.jpg"), StatusCode::kInvalidArgument, "e.jpg");
}

// --- EncodeJpegOptions::restart_interval ------------------------------------------

TEST(EncodeJpegRestartInterval, DriFollowsTheRowRuleAndPixelsAreUnchanged) {
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1}, {9, 17}, {48, 96}, {100, 130}, {375, 500}};
  for (auto [h, w] : sizes) {
    for (int color = 0; color < 3; ++color) {
      const int64_t c = color == 0 ? 1 : 3;
      for (bool progressive : {false, true}) {
        const std::string plain = Encode(h, w, c, color == 1, progressive);
        EXPECT_EQ(Parse(plain).dri, -1);
        for (int interval : {1, 3, 4, 7, 1000}) {
          const std::string context = std::to_string(w) + "x" + std::to_string(h) + " color " +
                                      std::to_string(color) + (progressive ? " progressive" : "") +
                                      " interval " + std::to_string(interval);
          SCOPED_TRACE(context);
          const std::string jpeg = Encode(h, w, c, color == 1, progressive, interval);
          ExpectRestarts(jpeg, interval, /*single_scan=*/!progressive);
          ExpectSamePixels(plain, jpeg, context);
        }
      }
    }
  }
  Tensor image = Photo(8, 8, 3, 1);
  for (int bad : {-1, 65536}) {
    EncodeJpegOptions o;
    o.restart_interval = bad;
    SLUICE_EXPECT_ERROR(EncodeJpeg(image, o), StatusCode::kInvalidArgument, "restart_interval");
  }
}

}  // namespace
}  // namespace sluice::ops
