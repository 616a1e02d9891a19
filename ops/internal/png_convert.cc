#include "sluice/ops/internal/png_convert.h"

namespace sluice::ops_internal {
namespace {

// Gray from RGB as libpng computes it without gamma: 8-bit truncates (and
// keeps gray pixels as they are), 16-bit rounds.
template <int kDepth>
inline uint32_t Gray(uint32_t r, uint32_t g, uint32_t b, const PngGrayGamma* gamma) {
  if constexpr (kDepth == 8) {
    if (gamma != nullptr) return gamma->Gray8(r, g, b);
    if (r == g && r == b) return r;
    return (kPngGrayRed * r + kPngGrayGreen * g + kPngGrayBlue * b) >> 15;
  } else {
    if (gamma != nullptr) return gamma->Gray16(r, g, b);
    return (kPngGrayRed * r + kPngGrayGreen * g + kPngGrayBlue * b + 16384) >> 15;
  }
}

template <int kInDepth, int kOutDepth>
inline uint32_t Depth(uint32_t v) {
  if constexpr (kInDepth == kOutDepth) {
    return v;
  } else if constexpr (kInDepth == 16) {
    return v >> 8;
  } else {
    return v * 257;
  }
}

template <typename In, int kInDepth, typename Out, int kOutDepth>
void Convert(const PngSamples& src, int out_channels, Out* out) {
  const In* in = static_cast<const In*>(src.data);
  const int sc = src.channels;
  const bool src_color = sc >= 3;
  const bool src_alpha = sc == 2 || sc == 4;
  const bool want_alpha = out_channels == 2 || out_channels == 4;
  const bool want_color = out_channels >= 3;
  constexpr uint32_t kMax = (1u << kInDepth) - 1;
  for (size_t i = 0; i < src.pixels; ++i, in += sc) {
    uint32_t r = in[0];
    uint32_t g = src_color ? in[1] : r;
    uint32_t b = src_color ? in[2] : r;
    uint32_t a = kMax;
    if (src_alpha) {
      a = in[sc - 1];
    } else if (src.has_key) {
      const bool match =
          src_color ? (r == src.key[0] && g == src.key[1] && b == src.key[2]) : r == src.key[0];
      if (match) a = 0;
    }
    if (want_color) {
      *out++ = static_cast<Out>(Depth<kInDepth, kOutDepth>(r));
      *out++ = static_cast<Out>(Depth<kInDepth, kOutDepth>(g));
      *out++ = static_cast<Out>(Depth<kInDepth, kOutDepth>(b));
    } else {
      const uint32_t gray = src_color ? Gray<kInDepth>(r, g, b, src.gamma) : r;
      *out++ = static_cast<Out>(Depth<kInDepth, kOutDepth>(gray));
    }
    if (want_alpha) *out++ = static_cast<Out>(Depth<kInDepth, kOutDepth>(a));
  }
}

}  // namespace

void ConvertPngSamples(const PngSamples& src, int out_channels, int out_depth, void* out) {
  if (src.depth == 8) {
    if (out_depth == 8) {
      Convert<uint8_t, 8, uint8_t, 8>(src, out_channels, static_cast<uint8_t*>(out));
    } else {
      Convert<uint8_t, 8, int32_t, 16>(src, out_channels, static_cast<int32_t*>(out));
    }
  } else {
    if (out_depth == 8) {
      Convert<uint16_t, 16, uint8_t, 8>(src, out_channels, static_cast<uint8_t*>(out));
    } else {
      Convert<uint16_t, 16, int32_t, 16>(src, out_channels, static_cast<int32_t*>(out));
    }
  }
}

}  // namespace sluice::ops_internal
