// libpng-compatible gamma for the PNG decoder's color-to-gray conversion.
//
// TensorFlow decodes PNGs with libpng and asks for gray with
// png_set_rgb_to_gray(png, 1, 0.299, 0.587). When the file declares a gamma
// that is not about 1 (a gAMA chunk; sRGB means 1/2.2), libpng then weighs
// the samples in linear light, through lookup tables built from that gamma
// (and, for 16-bit samples, at a precision set by sBIT and the output
// depth). PngGrayGamma rebuilds the same tables, so the gray values match
// TensorFlow's exactly.
#ifndef SLUICE_OPS_INTERNAL_PNG_GAMMA_H_
#define SLUICE_OPS_INTERNAL_PNG_GAMMA_H_

#include <cstdint>
#include <vector>

namespace sluice::ops_internal {

// libpng's rgb_to_gray weights for (0.299, 0.587), in 1/32768.
inline constexpr uint32_t kPngGrayRed = 9797;
inline constexpr uint32_t kPngGrayGreen = 19234;
inline constexpr uint32_t kPngGrayBlue = 32768 - kPngGrayRed - kPngGrayGreen;

struct PngGrayGamma {
  // 8-bit samples.
  uint8_t to_linear8[256];
  uint8_t from_linear8[256];
  // 16-bit samples: tables indexed by sample >> shift.
  int shift = 0;
  std::vector<uint16_t> to_linear16, from_linear16, gray16;

  // Gray of an RGB pixel with gray = libpng's result (8 or 16 bits).
  uint32_t Gray8(uint32_t r, uint32_t g, uint32_t b) const;
  uint32_t Gray16(uint32_t r, uint32_t g, uint32_t b) const;
};

// Builds the tables for a file gamma in libpng's fixed point (the gAMA
// value, 45455 for sRGB), samples of `depth` bits (8 or 16) decoded to
// `out_depth` bits, and the sBIT significant bits of the color channels (0
// if none). False, with *tables untouched, if libpng would not use gamma.
bool MakePngGrayGamma(uint32_t file_gamma, int depth, int out_depth, int significant_bits,
                      PngGrayGamma* tables);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_PNG_GAMMA_H_
