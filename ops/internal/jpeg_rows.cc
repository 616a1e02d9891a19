#include "sluice/ops/internal/jpeg_rows.h"

#include <algorithm>
#include <cstring>

namespace sluice::ops_internal {
namespace {

// At most this many rows per jpeg_read_scanlines call: an iMCU row is at
// most 4 (sampling factor) x 8 (DCT size) rows.
constexpr uint32_t kMaxRowsPerCall = 32;

inline void CmykToRgb(bool inverted, const uint8_t* p, int* r, int* g, int* b) {
  const int c = p[0], m = p[1], y = p[2], k = p[3];
  if (inverted) {
    *r = k * c / 255;
    *g = k * m / 255;
    *b = k * y / 255;
  } else {
    *r = (255 - k) * (255 - c) / 255;
    *g = (255 - k) * (255 - m) / 255;
    *b = (255 - k) * (255 - y) / 255;
  }
}

}  // namespace

void ConvertRow(const RowPlan& plan, const uint8_t* in, uint8_t* out) {
  in += plan.skip * plan.in_channels;
  if (!plan.cmyk) {
    std::memcpy(out, in, plan.width * plan.out_channels);
    return;
  }
  for (size_t i = 0; i < plan.width; ++i, in += 4) {
    int r, g, b;
    CmykToRgb(plan.adobe_inverted, in, &r, &g, &b);
    if (plan.out_channels == 3) {
      out[0] = static_cast<uint8_t>(r);
      out[1] = static_cast<uint8_t>(g);
      out[2] = static_cast<uint8_t>(b);
      out += 3;
    } else {
      // libjpeg's rgb_gray_convert: FIX(0.299), FIX(0.587), FIX(0.114), 16 bits.
      *out++ = static_cast<uint8_t>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
    }
  }
}

void ReadRows(void* p) {
  auto* a = static_cast<ReadRowsArgs*>(p);
  JSAMPROW rows[kMaxRowsPerCall];
  while (a->discard > 0) {
    rows[0] = a->scratch;
    if (jpeg_read_scanlines(a->cinfo, rows, 1) == 0) return;
    --a->discard;
  }
  while (a->done < a->rows) {
    JDIMENSION n;
    if (a->plan->direct) {
      const uint32_t want = std::min(a->rows - a->done, kMaxRowsPerCall);
      for (uint32_t i = 0; i < want; ++i) rows[i] = a->out + (a->done + i) * a->stride;
      n = jpeg_read_scanlines(a->cinfo, rows, want);
    } else {
      rows[0] = a->scratch;
      n = jpeg_read_scanlines(a->cinfo, rows, 1);
      if (n == 1) ConvertRow(*a->plan, a->scratch, a->out + a->done * a->stride);
    }
    if (n == 0) return;  // suspended: the data ended
    a->done += n;
  }
}

}  // namespace sluice::ops_internal
