// Reads the TensorFlow golden data of tests/data/ops/codec/ (made by
// tests/data/ops/make_codec_golden.py): input files, and cases from
// manifest.txt whose expected tensors live in decoded.bin. Also small helpers
// shared by the codec tests. Header-only, test-only.
#ifndef SLUICE_TESTS_OPS_CODEC_GOLDEN_H_
#define SLUICE_TESTS_OPS_CODEC_GOLDEN_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/tensor.h"
#include "test_util.h"

namespace sluice::testing {

struct CodecCase {
  std::map<std::string, std::string> params;
  std::vector<int64_t> shape;
  std::string dtype;     // "uint8" or "uint16"
  std::string expected;  // raw bytes (uint16 little-endian)

  const std::string& Get(const std::string& key) const {
    static const std::string kEmpty;
    auto it = params.find(key);
    return it == params.end() ? kEmpty : it->second;
  }
  int64_t Int(const std::string& key) const { return std::strtoll(Get(key).c_str(), nullptr, 10); }
  std::string Describe() const {
    std::string s;
    for (const auto& [k, v] : params) s += k + "=" + v + " ";
    return s;
  }
  // Element i of the expected tensor.
  int64_t At(size_t i) const {
    if (dtype == "uint8") return static_cast<uint8_t>(expected[i]);
    return static_cast<uint8_t>(expected[2 * i]) | (static_cast<uint8_t>(expected[2 * i + 1]) << 8);
  }
  size_t size() const { return dtype == "uint8" ? expected.size() : expected.size() / 2; }
};

class CodecGolden {
 public:
  static const CodecGolden& Get() {
    static const CodecGolden* golden = new CodecGolden();
    return *golden;
  }
  static std::string Path(const std::string& file) { return TestDataPath("ops/codec/" + file); }
  static std::string Read(const std::string& file) { return ReadFileOrDie(Path(file)); }

  std::vector<CodecCase> Cases(const std::string& op) const {
    std::vector<CodecCase> out;
    for (const CodecCase& c : cases_) {
      if (c.Get("op") == op) out.push_back(c);
    }
    return out;
  }

 private:
  CodecGolden() {
    const std::string blob = Read("decoded.bin");
    std::istringstream manifest(Read("manifest.txt"));
    std::string line;
    while (std::getline(manifest, line)) {
      if (line.empty() || line[0] == '#') continue;
      CodecCase c;
      std::istringstream fields(line);
      std::string kv;
      while (fields >> kv) {
        const size_t eq = kv.find('=');
        c.params[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      std::istringstream dims(c.Get("shape"));
      std::string d;
      while (std::getline(dims, d, ',')) c.shape.push_back(std::strtoll(d.c_str(), nullptr, 10));
      c.dtype = c.Get("dtype");
      const size_t offset = static_cast<size_t>(c.Int("offset"));
      const size_t nbytes = static_cast<size_t>(c.Int("nbytes"));
      if (offset + nbytes > blob.size()) {
        ADD_FAILURE() << "manifest case past the end of decoded.bin: " << line;
        continue;
      }
      c.expected = blob.substr(offset, nbytes);
      cases_.push_back(std::move(c));
    }
  }
  std::vector<CodecCase> cases_;
};

// Largest |actual - expected| over all elements; -1 if the shapes differ.
inline int64_t MaxAbsDiff(const Tensor& actual, const CodecCase& expected) {
  if (std::vector<int64_t>(actual.shape().dims().begin(), actual.shape().dims().end()) !=
      expected.shape) {
    return -1;
  }
  int64_t worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const int64_t a = actual.dtype() == DType::kUInt8
                          ? static_cast<int64_t>(actual.flat<uint8_t>()[i])
                          : static_cast<int64_t>(actual.flat<int32_t>()[i]);
    worst = std::max(worst, a > expected.At(i) ? a - expected.At(i) : expected.At(i) - a);
  }
  return worst;
}

// Largest |a - b| of two uint8 tensors of equal shape; -1 if shapes differ.
inline int MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != DType::kUInt8 || b.dtype() != DType::kUInt8) return -1;
  int worst = 0;
  const auto x = a.flat<uint8_t>();
  const auto y = b.flat<uint8_t>();
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(int{x[i]} - int{y[i]}));
  return worst;
}

// The window (y, x, height, width) of `image` (uint8 [H, W, C]), copied:
// what a crop decode must equal.
inline Tensor CropOf(const Tensor& image, int64_t y, int64_t x, int64_t height, int64_t width) {
  const int64_t W = image.shape().dim(1), C = image.shape().dim(2);
  Tensor out = Tensor::Allocate(DType::kUInt8, Shape{height, width, C}).value();
  const uint8_t* in = image.flat<uint8_t>().data();
  uint8_t* o = out.flat<uint8_t>().data();
  for (int64_t r = 0; r < height; ++r) {
    std::memcpy(o + r * width * C, in + ((y + r) * W + x) * C, width * C);
  }
  return out;
}

// Offset of the first marker `code` (0xFF code) before the first scan of a
// JPEG, walking the segments, or npos.
inline size_t FindJpegMarker(const std::string& jpeg, uint8_t code) {
  size_t pos = 2;
  while (pos + 4 <= jpeg.size() && static_cast<uint8_t>(jpeg[pos]) == 0xFF) {
    const uint8_t m = static_cast<uint8_t>(jpeg[pos + 1]);
    if (m == code) return pos;
    if (m == 0xDA) break;  // scan data follows
    pos += 2 + (static_cast<uint8_t>(jpeg[pos + 2]) << 8 | static_cast<uint8_t>(jpeg[pos + 3]));
  }
  return std::string::npos;
}

// A golden JPEG (rgb420_q90.jpg unless told) with its SOF0 claiming width x
// height.
inline std::string JpegClaiming(int width, int height,
                                const std::string& golden = "rgb420_q90.jpg") {
  std::string jpeg = CodecGolden::Read(golden);
  const size_t sof = FindJpegMarker(jpeg, 0xC0);
  EXPECT_NE(sof, std::string::npos);
  if (sof == std::string::npos) return jpeg;
  jpeg[sof + 5] = static_cast<char>(height >> 8);
  jpeg[sof + 6] = static_cast<char>(height & 0xFF);
  jpeg[sof + 7] = static_cast<char>(width >> 8);
  jpeg[sof + 8] = static_cast<char>(width & 0xFF);
  return jpeg;
}

// A decode either worked or failed with one of the expected codes and a
// message naming the input.
template <typename T>
inline void ExpectCleanOutcome(const Result<T>& r, std::string_view name,
                               const std::string& context) {
  if (r.ok()) return;
  const StatusCode code = r.status().code();
  EXPECT_TRUE(code == StatusCode::kInvalidArgument || code == StatusCode::kResourceExhausted)
      << context << ": " << r.status();
  EXPECT_NE(r.status().message().find(name), std::string_view::npos)
      << context << ": " << r.status();
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_OPS_CODEC_GOLDEN_H_
