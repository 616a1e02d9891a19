// libFuzzer target for the JPEG decoder (ops/jpeg.h).
//
// Input: 4 option bytes, then the JPEG. The options pick channels, DCT
// scale, DCT method, upsampling, strict/recover modes and a crop window.
// Every outcome must be an image or InvalidArgument / ResourceExhausted
// naming the input; a decoded image must have JpegOutputShape(); in strict
// mode (no recovered corruption), the crop must equal the same window of
// the full decode; the zero-copy region decode must equal the crop; the
// streamed decode must equal the full decode, row for row.
//
// Build with -DSLUICE_FUZZ=ON under clang; run for example
//   ./jpeg_decode_fuzz tests/fuzz/corpus/jpeg_decode -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "sluice/ops/internal/jpeg_region.h"
#include "sluice/ops/jpeg.h"

namespace {

constexpr std::string_view kName = "fuzz.jpg";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "jpeg_decode_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckError(const sluice::Status& s) {
  if (s.code() != sluice::StatusCode::kInvalidArgument &&
      s.code() != sluice::StatusCode::kResourceExhausted) {
    Fail("unexpected error code", s.ToString());
  }
  if (s.message().find(kName) == std::string_view::npos)
    Fail("error without the name", s.ToString());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const std::string_view jpeg(reinterpret_cast<const char*>(data) + 4, size - 4);
  sluice::ops::DecodeJpegOptions o;
  static constexpr int kChannels[] = {0, 1, 3, 3};
  static constexpr int kRatios[] = {1, 2, 4, 8};
  o.channels = kChannels[data[0] & 3];
  o.ratio = kRatios[(data[0] >> 2) & 3];
  o.dct_method = (data[0] & 16) ? sluice::ops::JpegDctMethod::kIntegerAccurate
                                : sluice::ops::JpegDctMethod::kIntegerFast;
  o.fancy_upscaling = (data[0] & 32) == 0;
  o.strict = (data[0] & 64) != 0;
  o.try_recover_truncated = (data[0] & 128) != 0;
  o.acceptable_fraction = (data[1] & 1) ? 0.5f : 1.0f;
  o.max_pixels = 1 << 22;  // keep each run small and fast
  o.name = kName;

  (void)sluice::ops::ReadJpegHeader(jpeg, kName);
  const sluice::Result<sluice::Shape> shape = sluice::ops::JpegOutputShape(jpeg, o);
  const sluice::Result<sluice::Tensor> full = sluice::ops::DecodeJpeg(jpeg, o);
  // The streamed decode (band by band, the unfused crop-resize path's): the
  // same outcome, and every row once, in order, equal to the full decode's.
  int64_t next_row = 0;
  bool rows_differ = false;
  const sluice::Status stream_status = sluice::ops_internal::DecodeJpegRows(
      jpeg, o, [&](int64_t y, int64_t n, const uint8_t* rows, int64_t stride) {
        if (y != next_row || n < 1) Fail("rows out of order", std::to_string(y));
        next_row = y + n;
        if (!full.ok()) return;
        const int64_t row = full->shape().dim(1) * full->shape().dim(2);
        if (y + n > full->shape().dim(0)) Fail("rows past the image", std::to_string(y + n));
        for (int64_t i = 0; i < n; ++i) {
          rows_differ |=
              std::memcmp(rows + i * stride, full->flat<uint8_t>().data() + (y + i) * row,
                          static_cast<size_t>(row)) != 0;
        }
      });
  if (stream_status.ok() != full.ok() ||
      (!full.ok() && stream_status.message() != full.status().message())) {
    Fail("the streamed decode and the full decode disagree", stream_status.ToString());
  }
  if (full.ok() && (rows_differ || next_row != full->shape().dim(0))) {
    Fail("the streamed rows differ from the full decode", std::to_string(next_row));
  }
  if (!full.ok()) {
    CheckError(full.status());
    return 0;
  }
  if (!shape.ok() || *shape != full->shape()) Fail("shape differs from JpegOutputShape", "");
  const int64_t h = full->shape().dim(0), w = full->shape().dim(1), c = full->shape().dim(2);
  sluice::ops::JpegCropWindow win;
  win.y = data[2] % h;
  win.x = data[3] % w;
  win.height = 1 + (data[1] >> 1) % (h - win.y);
  win.width = 1 + (data[2] ^ data[3]) % (w - win.x);
  const sluice::Result<sluice::Tensor> crop = sluice::ops::DecodeAndCropJpeg(jpeg, win, o);
  // The same decode as a view of wider rows (the fused crop-resize path's):
  // the same outcome and pixels.
  sluice::ops_internal::JpegRegion region;
  const sluice::Status region_status =
      sluice::ops_internal::DecodeJpegRegion(jpeg, win, o, &region);
  if (region_status.ok() != crop.ok() ||
      (!crop.ok() && region_status.message() != crop.status().message())) {
    Fail("the region decode and the crop disagree", region_status.ToString());
  }
  if (crop.ok()) {
    const uint8_t* p = crop->flat<uint8_t>().data();
    for (int64_t y = 0; y < win.height; ++y) {
      if (std::memcmp(region.data + y * region.row_stride, p + y * win.width * c, win.width * c) !=
          0) {
        Fail("the region differs from the crop", std::to_string(y));
      }
    }
  }
  if (!crop.ok()) {
    CheckError(crop.status());
    // The crop decodes a subset of what the full decode did, so in strict
    // mode it cannot meet a warning the full decode did not. (It once did:
    // libjpeg kept the Huffman tables of the previous decode on the thread,
    // which a file using an undefined table then picked up; see
    // corpus/jpeg_decode/regression-stale-huffman-table and
    // tests/ops/jpeg_history_test.cc.)
    if (o.strict) Fail("strict full decode worked but the crop failed", crop.status().ToString());
    return 0;
  }
  if (o.strict) {
    const uint8_t* f = full->flat<uint8_t>().data();
    const uint8_t* p = crop->flat<uint8_t>().data();
    for (int64_t y = 0; y < win.height; ++y) {
      if (std::memcmp(p + y * win.width * c, f + ((win.y + y) * w + win.x) * c, win.width * c) !=
          0) {
        Fail("crop differs from the full decode",
             std::to_string(win.y) + "," + std::to_string(win.x));
      }
    }
  }
  return 0;
}
