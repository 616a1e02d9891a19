#include "sluice/ops/internal/jpeg_splice.h"

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sluice/ops/internal/simd.h"

namespace sluice::ops_internal {
namespace {

constexpr uint8_t kSof0 = 0xC0, kSof1 = 0xC1, kDht = 0xC4, kJpg = 0xC8, kDac = 0xCC;
constexpr uint8_t kRst0 = 0xD0, kRst7 = 0xD7, kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA;
constexpr uint8_t kDnl = 0xDC, kDri = 0xDD;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Appends the offsets base + i of the set bits i of `m` at out[*k...]:
// the first four with unconditional stores at fixed slots (*k then moves
// past the ones that were bits; the others get overwritten), the rare
// fifth and later in a loop. Branching once per marker would mispredict
// about once per marker.
inline __attribute__((always_inline)) void AppendBits(uint64_t m, uint32_t base, uint32_t* out,
                                                      size_t* k) {
  // The top bit keeps ctz defined (and branch-free) for v == 0: junk slot.
  auto at = [base](uint64_t v) {
    return base + static_cast<uint32_t>(__builtin_ctzll(v | uint64_t{1} << 63));
  };
  const uint64_t m1 = m & (m - 1), m2 = m1 & (m1 - 1), m3 = m2 & (m2 - 1);
  uint32_t* o = out + *k;
  o[0] = at(m);
  o[1] = at(m1);
  o[2] = at(m2);
  o[3] = at(m3);
  *k += static_cast<size_t>(m != 0) + (m1 != 0) + (m2 != 0) + (m3 != 0);
  for (uint64_t rest = m3 & (m3 - 1); rest != 0; rest &= rest - 1) out[(*k)++] = at(rest);
}

// The block loops of FindMarkerCodes: from q while 64 bytes remain and
// fewer than `want` are found; return where they stopped.
#if defined(__SSE2__)
size_t ScanBlocksSse2(const uint8_t* p, size_t q, size_t n, size_t want, uint32_t* out, size_t* k) {
  const __m128i ff = _mm_set1_epi8(static_cast<char>(0xFF));
  const __m128i zero = _mm_setzero_si128();
  auto mask16 = [&](size_t at) -> uint64_t {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    const __m128i prev = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at - 1));
    const __m128i not_code = _mm_or_si128(_mm_cmpeq_epi8(v, ff), _mm_cmpeq_epi8(v, zero));
    return static_cast<uint16_t>(
        _mm_movemask_epi8(_mm_andnot_si128(not_code, _mm_cmpeq_epi8(prev, ff))));
  };
  for (; q + 64 <= n && *k < want; q += 64) {
    AppendBits(mask16(q) | mask16(q + 16) << 16 | mask16(q + 32) << 32 | mask16(q + 48) << 48,
               static_cast<uint32_t>(q), out, k);
  }
  return q;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512bw"))) size_t ScanBlocksAvx512(const uint8_t* p, size_t q,
                                                                    size_t n, size_t want,
                                                                    uint32_t* out, size_t* k) {
  const __m512i ff = _mm512_set1_epi8(static_cast<char>(0xFF));
  for (; q + 64 <= n && *k < want; q += 64) {
    const __m512i v = _mm512_loadu_si512(p + q);
    const uint64_t is_ff = _mm512_cmpeq_epi8_mask(v, ff);
    const uint64_t nonzero = _mm512_test_epi8_mask(v, v);
    const uint64_t after_ff = is_ff << 1 | (p[q - 1] == 0xFF ? 1 : 0);
    AppendBits(~is_ff & nonzero & after_ff, static_cast<uint32_t>(q), out, k);
  }
  return q;
}
#endif

// The offsets of marker codes in p[from, n): bytes other than 0x00 and 0xFF
// that follow a 0xFF (a stuffed 0xFF 0x00 is data; 0xFF 0xFF is fill). It
// stops once it has found `want` (or more). REQUIRES: from >= 1.
std::vector<uint32_t> FindMarkerCodes(const uint8_t* p, size_t from, size_t n, size_t want) {
  // A block starts while fewer than `want` are found and adds at most 64.
  std::vector<uint32_t> codes(want + 64);
  uint32_t* out = codes.data();
  size_t k = 0, q = from;
#if defined(__x86_64__) && defined(__GNUC__)
  if (CpuHasAvx512Bw()) q = ScanBlocksAvx512(p, q, n, want, out, &k);
#endif
#if defined(__SSE2__)
  q = ScanBlocksSse2(p, q, n, want, out, &k);
#endif
  for (; q < n && k < want; ++q) {
    if (p[q] != 0x00 && p[q] != 0xFF && p[q - 1] == 0xFF) out[k++] = static_cast<uint32_t>(q);
  }
  codes.resize(k);
  return codes;
}

struct Frame {
  int64_t width = 0, height = 0;
  int components = 0;
  int max_h = 1, max_v = 1;
  size_t size_field = 0;
};

// Reads the frame header body `seg` (after the length). False if it is not
// an 8-bit frame with 1 to 4 components and sane sampling factors.
bool ParseFrame(const uint8_t* seg, size_t len, Frame* f) {
  if (len < 6 || seg[0] != 8) return false;
  f->height = (seg[1] << 8) | seg[2];
  f->width = (seg[3] << 8) | seg[4];
  f->components = seg[5];
  if (f->height == 0 || f->width == 0 || f->components < 1 || f->components > 4 ||
      len != 6 + 3 * static_cast<size_t>(f->components)) {
    return false;
  }
  for (int c = 0; c < f->components; ++c) {
    const int h = seg[7 + 3 * c] >> 4, v = seg[7 + 3 * c] & 15;
    if (h < 1 || h > 4 || v < 1 || v > 4) return false;
    f->max_h = std::max(f->max_h, h);
    f->max_v = std::max(f->max_v, v);
  }
  return true;
}

// A scan header for all components, sequential (Ss=0, Se=63, Ah=Al=0).
bool FullSequentialScan(const uint8_t* seg, size_t len, int components) {
  const size_t ns = len > 0 ? seg[0] : 0;
  if (ns != static_cast<size_t>(components) || len != 1 + 2 * ns + 3) return false;
  return seg[1 + 2 * ns] == 0 && seg[2 + 2 * ns] == 63 && seg[3 + 2 * ns] == 0;
}

// Walks the markers before the scan. Fills `frame`, `interval` and the
// offset of the entropy-coded data; false on anything unexpected.
bool ParseHeaders(const uint8_t* p, size_t n, Frame* frame, int64_t* interval, size_t* data) {
  if (n < 4 || p[0] != 0xFF || p[1] != kSoi) return false;
  bool have_frame = false;
  size_t pos = 2;
  while (true) {
    if (pos >= n || p[pos] != 0xFF) return false;
    while (pos < n && p[pos] == 0xFF) ++pos;  // fill bytes
    if (pos + 3 > n) return false;
    const uint8_t m = p[pos++];
    if (m == 0x00 || m == 0x01 || m == kSoi || m == kEoi || (m >= kRst0 && m <= kRst7) ||
        m == kDnl) {
      return false;
    }
    const size_t len = (static_cast<size_t>(p[pos]) << 8) | p[pos + 1];
    if (len < 2 || len > n - pos) return false;
    const uint8_t* body = p + pos + 2;
    const size_t body_len = len - 2;
    if (m == kSof0 || m == kSof1) {
      if (have_frame || !ParseFrame(body, body_len, frame)) return false;
      frame->size_field = pos + 3;
      have_frame = true;
    } else if (m >= 0xC2 && m <= 0xCF && m != kDht && m != kJpg && m != kDac) {
      return false;  // progressive, lossless, hierarchical or arithmetic
    } else if (m == kDri) {
      if (body_len != 2) return false;
      *interval = (body[0] << 8) | body[1];
    } else if (m == kSos) {
      if (!have_frame || !FullSequentialScan(body, body_len, frame->components)) return false;
      *data = pos + len;
      return true;
    }
    pos += len;
  }
}

}  // namespace

std::optional<JpegSegments> ParseJpegSegments(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  if (n > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  Frame f;
  int64_t interval = 0;
  JpegSegments s;
  if (!ParseHeaders(p, n, &f, &interval, &s.data_start) || interval <= 0) return std::nullopt;
  // One 8x8 block per MCU in a one-component scan; else max sampling x 8.
  const int64_t mcu_w = f.components == 1 ? 8 : 8 * f.max_h;
  const int64_t mcu_h = f.components == 1 ? 8 : 8 * f.max_v;
  const int64_t mcus_per_row = CeilDiv(f.width, mcu_w), mcu_rows = CeilDiv(f.height, mcu_h);
  if (mcus_per_row % interval == 0) {
    s.segs_per_row = mcus_per_row / interval;
    s.seg_width = interval * mcu_w;
    s.seg_height = mcu_h;
    s.seg_rows = mcu_rows;
  } else if (interval % mcus_per_row == 0) {
    const int64_t rows_per_seg = interval / mcus_per_row;
    s.segs_per_row = 1;
    s.seg_width = f.width;
    s.seg_height = rows_per_seg * mcu_h;
    s.seg_rows = CeilDiv(mcu_rows, rows_per_seg);
  } else {
    return std::nullopt;  // segments straddle rows: no rectangles
  }
  const int64_t count = s.segs_per_row * s.seg_rows;
  // Each marker takes two bytes: more segments than that cannot be there.
  if (count > static_cast<int64_t>((n - s.data_start) / 2 + 1)) return std::nullopt;
  s.width = f.width;
  s.height = f.height;
  s.size_field = f.size_field;
  // count - 1 restart markers, then EOI; anything after EOI is ignored.
  const std::vector<uint32_t> codes =
      FindMarkerCodes(p, s.data_start, n, static_cast<size_t>(count));
  if (codes.size() < static_cast<size_t>(count)) return std::nullopt;  // no EOI: truncated
  s.starts.resize(static_cast<size_t>(count));
  s.ends.resize(static_cast<size_t>(count));
  uint32_t start = static_cast<uint32_t>(s.data_start);
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t code = codes[static_cast<size_t>(i)];
    const uint8_t want = i + 1 == count ? kEoi : static_cast<uint8_t>(kRst0 + (i & 7));
    if (p[code] != want) return std::nullopt;
    uint32_t end = code - 1;  // the 0xFF before the code, then any fill 0xFFs
    while (end > start && p[end - 1] == 0xFF) --end;
    s.starts[static_cast<size_t>(i)] = start;
    s.ends[static_cast<size_t>(i)] = end;
    start = code + 1;
  }
  return s;
}

namespace {

// The segments [*lo, *hi) of `size` scaled pixels each covering [y, y + h)
// plus `margin` on both sides, within [0, count).
void SegmentRange(int64_t y, int64_t h, int64_t size, int64_t count, int64_t margin, int64_t* lo,
                  int64_t* hi) {
  *lo = y / size;
  if (y - *lo * size<margin&& * lo> 0) --*lo;
  *hi = CeilDiv(y + h, size);
  if (*hi * size - (y + h) < margin && *hi < count) ++*hi;
  *hi = std::min(*hi, count);
}

void Put16(std::string* out, int64_t v) {
  out->push_back(static_cast<char>((v >> 8) & 0xFF));
  out->push_back(static_cast<char>(v & 0xFF));
}

}  // namespace

ScaledWindow SpliceJpegWindow(std::string_view bytes, const JpegSegments& s, const ScaledWindow& w,
                              int denominator, int64_t margin, std::string* out) {
  const int64_t seg_h = s.seg_height / denominator;
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 1;
  SegmentRange(w.y, w.height, seg_h, s.seg_rows, margin, &r0, &r1);
  int64_t seg_w = 0;
  if (s.segs_per_row > 1) {
    seg_w = s.seg_width / denominator;
    SegmentRange(w.x, w.width, seg_w, s.segs_per_row, margin, &c0, &c1);
  }
  const int64_t height = std::min(s.height, r1 * s.seg_height) - r0 * s.seg_height;
  const int64_t width =
      s.segs_per_row > 1 ? std::min(s.width, c1 * s.seg_width) - c0 * s.seg_width : s.width;
  out->clear();
  out->append(bytes.data(), s.size_field);
  Put16(out, height);
  Put16(out, width);
  out->append(bytes.data() + s.size_field + 4, s.data_start - s.size_field - 4);
  int64_t k = 0;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c, ++k) {
      if (k > 0) {
        out->push_back(static_cast<char>(0xFF));
        out->push_back(static_cast<char>(kRst0 + ((k - 1) & 7)));
      }
      const size_t i = static_cast<size_t>(r * s.segs_per_row + c);
      out->append(bytes.data() + s.starts[i], s.ends[i] - s.starts[i]);
    }
  }
  out->push_back(static_cast<char>(0xFF));
  out->push_back(static_cast<char>(kEoi));
  return ScaledWindow{w.y - r0 * seg_h, w.x - c0 * seg_w, w.height, w.width};
}

}  // namespace sluice::ops_internal
