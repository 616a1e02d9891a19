// Restart-segment splicing for crop decodes.
//
// A JPEG with restart markers splits its entropy-coded data into segments of
// `interval` MCUs, each decodable on its own (the DC predictors restart). When
// segments tile the image in rectangles (the interval divides the MCUs per
// row, or is a whole number of MCU rows), the segments a crop window covers,
// with their headers and a patched frame size, form a smaller valid JPEG
// whose pixels are exactly those of the original at the same place: a crop
// decode then entropy-decodes only what the window needs instead of every
// row above its bottom edge. DecodeAndCropJpeg uses this when it can; files
// without such markers (or anything this parser does not fully understand)
// take the ordinary path.
//
// Only single-scan sequential Huffman JPEGs (SOF0/SOF1, one SOS covering all
// components) qualify. The parser walks the markers and the entropy data once
// (64 bytes at a time), checks that every expected RSTn marker is there, in
// order, and that EOI follows the last segment; any doubt returns nullopt.
// It reads only `bytes` and allocates at most one offset per marker found.
//
// Thread-safety: plain functions over their arguments.
#ifndef SLUICE_OPS_INTERNAL_JPEG_SPLICE_H_
#define SLUICE_OPS_INTERNAL_JPEG_SPLICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::ops_internal {

struct JpegSegments {
  int64_t width = 0, height = 0;  // of the image, in pixels
  int64_t seg_width = 0;          // pixels per segment across (width if 1 per row)
  int64_t seg_height = 0;         // pixels per segment down (a multiple of the MCU height)
  int64_t segs_per_row = 0, seg_rows = 0;
  size_t size_field = 0;         // offset of the frame header's height (then width)
  size_t data_start = 0;         // first byte of entropy-coded data
  std::vector<uint32_t> starts;  // segment i: [starts[i], ends[i])
  std::vector<uint32_t> ends;
};

// The segment layout of `bytes`, or nullopt if it has no usable restart
// markers (or is not a JPEG this parser accepts; the caller then decodes as
// usual, which reports any error).
std::optional<JpegSegments> ParseJpegSegments(std::string_view bytes);

// Scaled pixels kept around a window (inside the image) when choosing its
// segments: chroma upsampling of a pixel on a segment border reads the
// chroma sample across it, so a border within this distance of the window
// brings in the segment beyond. One is enough (tests/ops/jpeg_splice_test
// checks windows on and around every border, at every scale, bit for bit
// against the full decode); zero is not.
inline constexpr int64_t kJpegSpliceMargin = 1;

// A window of the image scaled by 1/`denominator`, in scaled pixels.
struct ScaledWindow {
  int64_t y = 0, x = 0, height = 0, width = 0;
};

// Writes into `*out` the JPEG made of the segments `window` needs, with a
// margin of `margin` scaled pixels on every side (see kJpegSpliceMargin), and
// returns the window's position in it (same size). REQUIRES: the window lies
// inside the scaled image; denominator in {1, 2, 4, 8}.
ScaledWindow SpliceJpegWindow(std::string_view bytes, const JpegSegments& segments,
                              const ScaledWindow& window, int denominator, int64_t margin,
                              std::string* out);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_JPEG_SPLICE_H_
