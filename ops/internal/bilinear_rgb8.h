// The horizontal pass of bilinear resizing for the common case of uint8
// images with 3 channels (decoded RGB): each output pixel is
// a + (b - a) * lerp of its two neighboring input pixels, in float32, per
// channel, TF's resize_bilinear arithmetic exactly. Offsets and lerps are
// computed once per resize (RgbLerpPlan), not once per row, and the inner
// loop reads both neighbors with one 8-byte load. Internal; thread-safe.
#ifndef SLUICE_OPS_INTERNAL_BILINEAR_RGB8_H_
#define SLUICE_OPS_INTERNAL_BILINEAR_RGB8_H_

#include <cstdint>
#include <vector>

#include "sluice/ops/internal/resize_taps.h"

namespace sluice::ops_internal {

struct RgbLerpPlan {
  // Pixels [0, fast) read the 8 bytes at offset[x] (3 * the left neighbor):
  // the left neighbor, then the right one (one pixel further) and 2 bytes
  // more, all inside the row. lerp4[x] holds the lerp four times.
  int64_t fast = 0;
  std::vector<int32_t> offset;
  std::vector<float> lerp4;
  // The taps, for the remaining pixels at the right edge.
  const LerpTaps* taps = nullptr;
};

// REQUIRES: taps outlives the plan; taps.lower[x] <= taps.upper[x] <=
// taps.lower[x] + 1 (BilinearTaps' and any half-pixel lerp taps' shape),
// all < in_width, and lower is non-decreasing.
RgbLerpPlan MakeRgbLerpPlan(const LerpTaps& taps, int64_t in_width);

// dst[3 * x + c] = a + (b - a) * lerp for output pixel x and channel c.
// Writes one float past the last pixel (dst must have room for
// 3 * out_width + 1 floats).
void LerpRgbRow(const uint8_t* src, const RgbLerpPlan& plan, float* dst);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_BILINEAR_RGB8_H_
