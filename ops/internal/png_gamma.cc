// The table constructions follow libpng 1.6's png_build_gamma_table with
// floating-point arithmetic (its default build, and TensorFlow's):
// png_build_8bit_table, png_build_16bit_table and png_build_16to8_table,
// with libpng's fixed-point helpers (100000 is 1.0).
#include "sluice/ops/internal/png_gamma.h"

#include <algorithm>
#include <cmath>

namespace sluice::ops_internal {
namespace {

constexpr int64_t kOne = 100000;

int64_t Reciprocal(int64_t a) { return static_cast<int64_t>(std::floor(1e10 / a + .5)); }
int64_t Reciprocal2(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(1e15 / a / b + .5));
}
int64_t Product2(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(a * 1e-5 * b + .5));
}
// PNG_GAMMA_THRESHOLD_FIXED is 5000 (0.05).
bool Significant(int64_t gamma) { return gamma < kOne - 5000 || gamma > kOne + 5000; }

void Build8(int64_t gamma, uint8_t* table) {
  for (int i = 0; i < 256; ++i) {
    table[i] = static_cast<uint8_t>(
        i == 0 || i == 255 || !Significant(gamma)
            ? i
            : std::floor(255 * std::pow(static_cast<int>(i) / 255., gamma * .00001) + .5));
  }
}

// Entry k maps the sample k << shift (libpng's table[k & mask][k >> n]).
std::vector<uint16_t> Build16(int shift, int64_t gamma) {
  const uint32_t max = (1u << (16 - shift)) - 1;
  const uint32_t max_by_2 = 1u << (15 - shift);
  const double fmax = 1. / static_cast<double>(max);
  std::vector<uint16_t> table(max + 1);
  for (uint32_t ig = 0; ig <= max; ++ig) {
    if (Significant(gamma)) {
      table[ig] =
          static_cast<uint16_t>(std::floor(65535. * std::pow(ig * fmax, gamma * .00001) + .5));
    } else {
      table[ig] = static_cast<uint16_t>(shift != 0 ? (ig * 65535u + max_by_2) / max : ig);
    }
  }
  return table;
}

uint32_t Correct16(uint32_t value, int64_t gamma) {
  if (value == 0 || value >= 65535) return value;
  return static_cast<uint32_t>(
      std::floor(65535 * std::pow(static_cast<int32_t>(value) / 65535., gamma * .00001) + .5));
}

// 16-bit samples that will be cut to 8 bits: each maps to i * 257 for the
// 8-bit i it rounds to.
std::vector<uint16_t> Build16To8(int shift, int64_t gamma) {
  const uint32_t num = 1u << (16 - shift);
  const uint32_t max = num - 1;
  std::vector<uint16_t> table(num, 65535);
  uint32_t last = 0;
  for (uint32_t i = 0; i < 255; ++i) {
    const uint16_t out = static_cast<uint16_t>(i * 257u);
    const uint32_t bound = (Correct16(out + 128u, gamma) * max + 32768u) / 65535u + 1u;
    for (; last < bound && last < num; ++last) table[last] = out;
  }
  return table;
}

}  // namespace

uint32_t PngGrayGamma::Gray8(uint32_t r, uint32_t g, uint32_t b) const {
  if (r == g && r == b) return r;
  const uint32_t sum =
      kPngGrayRed * to_linear8[r] + kPngGrayGreen * to_linear8[g] + kPngGrayBlue * to_linear8[b];
  return from_linear8[(sum + 16384) >> 15];
}

uint32_t PngGrayGamma::Gray16(uint32_t r, uint32_t g, uint32_t b) const {
  if (r == g && r == b) return gray16[r >> shift];
  const uint32_t sum = kPngGrayRed * to_linear16[r >> shift] +
                       kPngGrayGreen * to_linear16[g >> shift] +
                       kPngGrayBlue * to_linear16[b >> shift];
  return from_linear16[((sum + 16384) >> 15) >> shift];
}

bool MakePngGrayGamma(uint32_t file_gamma, int depth, int out_depth, int significant_bits,
                      PngGrayGamma* tables) {
  if (file_gamma == 0) return false;
  // With no screen gamma set, libpng takes the file gamma's reciprocal: the
  // output keeps the file's encoding.
  const int64_t gamma = file_gamma;
  const int64_t screen = Reciprocal(gamma);
  if (!Significant(gamma) && !Significant(screen)) return false;
  if (depth == 8) {
    Build8(Reciprocal(gamma), tables->to_linear8);
    Build8(Reciprocal(screen), tables->from_linear8);
    return true;
  }
  int shift = significant_bits > 0 && significant_bits < 16 ? 16 - significant_bits : 0;
  if (out_depth == 8) shift = std::max(shift, 16 - 11);  // PNG_MAX_GAMMA_8
  shift = std::min(shift, 8);
  tables->shift = shift;
  tables->to_linear16 = Build16(shift, Reciprocal(gamma));
  tables->from_linear16 = Build16(shift, Reciprocal(screen));
  tables->gray16 = out_depth == 8 ? Build16To8(shift, Product2(gamma, screen))
                                  : Build16(shift, Reciprocal2(gamma, screen));
  return true;
}

}  // namespace sluice::ops_internal
