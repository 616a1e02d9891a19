// The horizontal pass of bilinear resizing for the common case of uint8
// images with 3 channels (decoded RGB): each output pixel is
// a + (b - a) * lerp of its two neighboring input pixels, in float32, per
// channel, TF's resize_bilinear arithmetic exactly. Offsets and lerps are
// computed once per resize (RgbLerpPlan), not once per row. With AVX-512
// VBMI, eight pixels at a time gather their neighbors from one 64-byte span
// of the row with byte permutes; otherwise each pixel reads both neighbors
// with one 8-byte load. Internal; thread-safe.
#ifndef SLUICE_OPS_INTERNAL_BILINEAR_RGB8_H_
#define SLUICE_OPS_INTERNAL_BILINEAR_RGB8_H_

#include <cstdint>
#include <vector>

#include "sluice/ops/internal/resize_taps.h"

namespace sluice::ops_internal {

// Eight output pixels whose neighbors all lie in the 64 bytes at `base`:
// ab[2j] and ab[2j + 1] are the offsets from base of the left and right
// neighbors' bytes for output float j (3 per pixel), mask_lo and mask_hi
// the bytes of [base, base + 64) inside the row (the rest are not read).
struct RgbGroup {
  int32_t base = 0;
  uint32_t mask_lo = 0, mask_hi = 0;
  uint8_t ab[48] = {};
};

// Eight output floats (AVX2 without VBMI) whose neighbors' bytes all lie in
// the 32 bytes at `base`: byte-shuffle indices into the first and the second
// 16 of them, per 32-bit lane (left neighbor, zero, right neighbor, zero;
// 0x80, which shuffles in a zero, where the byte comes from the other half).
struct RgbVector {
  int32_t base = 0;
  uint8_t lo[32] = {}, hi[32] = {};
};

struct RgbLerpPlan {
  // Pixels [0, fast) read the 8 bytes at offset[x] (3 * the left neighbor):
  // the left neighbor, then the right one (one pixel further) and 2 bytes
  // more, all inside the row. lerp4[x] holds the lerp four times.
  int64_t fast = 0;
  std::vector<int32_t> offset;
  std::vector<float> lerp4;
  // With AVX-512 VBMI: pixels [0, 8 * group.size()) in groups of eight;
  // the first unmasked_groups have all their 64 bytes inside the row.
  std::vector<RgbGroup> group;
  int64_t unmasked_groups = 0;
  // With AVX2 but not VBMI: output floats [0, 8 * vectors.size()).
  std::vector<RgbVector> vectors;
  // For groups or vectors: the lerp of each output float (3 per pixel).
  std::vector<float> lerp3;
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
