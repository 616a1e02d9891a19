#include "sluice/ops/internal/jpeg_splice.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace sluice::ops_internal {
namespace {

constexpr uint8_t kSof0 = 0xC0, kSof1 = 0xC1, kDht = 0xC4, kJpg = 0xC8, kDac = 0xCC;
constexpr uint8_t kRst0 = 0xD0, kRst7 = 0xD7, kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA;
constexpr uint8_t kDnl = 0xDC, kDri = 0xDD;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
  s.starts.reserve(static_cast<size_t>(count));
  s.ends.reserve(static_cast<size_t>(count));
  s.starts.push_back(static_cast<uint32_t>(s.data_start));
  uint8_t next_rst = kRst0;
  size_t q = s.data_start;
  while (true) {
    const void* ff = q < n ? std::memchr(p + q, 0xFF, n - q) : nullptr;
    if (ff == nullptr) return std::nullopt;  // no EOI: truncated
    const size_t at = static_cast<size_t>(static_cast<const uint8_t*>(ff) - p);
    size_t r = at + 1;
    while (r < n && p[r] == 0xFF) ++r;
    if (r >= n) return std::nullopt;
    const uint8_t b = p[r];
    q = r + 1;
    if (b == 0x00) continue;  // a stuffed 0xFF data byte
    if (b == kEoi) {
      if (static_cast<int64_t>(s.starts.size()) != count) return std::nullopt;
      s.ends.push_back(static_cast<uint32_t>(at));
      return s;
    }
    if (b != next_rst || static_cast<int64_t>(s.starts.size()) == count) return std::nullopt;
    s.ends.push_back(static_cast<uint32_t>(at));
    s.starts.push_back(static_cast<uint32_t>(q));
    next_rst = next_rst == kRst7 ? kRst0 : next_rst + 1;
  }
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
