// Sample conversion for the PNG decoder: from the samples libspng produced
// (gray, gray+alpha, RGB or RGBA at 8 or 16 bits, plus an optional tRNS color
// key) to the channels and depth asked for, with libpng's rules and order, so
// the result equals tf.io.decode_png: tRNS becomes alpha, color becomes gray
// at the source depth (libpng's weights, in linear light if the file has a
// gamma), then 16 bits drop to 8 by keeping the high byte or 8 bits grow to
// 16 by multiplying by 257.
#ifndef SLUICE_OPS_INTERNAL_PNG_CONVERT_H_
#define SLUICE_OPS_INTERNAL_PNG_CONVERT_H_

#include <cstddef>
#include <cstdint>

#include "sluice/ops/internal/png_gamma.h"

namespace sluice::ops_internal {

struct PngSamples {
  const void* data = nullptr;  // uint8_t, or host-endian uint16_t if depth 16
  size_t pixels = 0;
  int channels = 0;  // 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
  int depth = 8;     // 8 or 16
  // tRNS color key (gray in key[0], or RGB), at `depth` scale: matching
  // pixels are transparent when alpha is asked for.
  bool has_key = false;
  uint16_t key[3] = {0, 0, 0};
  // Color to gray in linear light (png_gamma.h); null: the plain sum.
  const PngGrayGamma* gamma = nullptr;
};

// Writes `src.pixels` pixels of `out_channels` (1..4) to `out`: uint8_t if
// out_depth is 8, int32_t if 16.
void ConvertPngSamples(const PngSamples& src, int out_channels, int out_depth, void* out);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_PNG_CONVERT_H_
