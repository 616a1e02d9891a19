#include "sluice/ops/internal/resize_kernels.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "sluice/ops/internal/bilinear_rgb8.h"
#include "sluice/ops/internal/simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace sluice::ops_internal {
namespace {

template <typename T>
inline float F(T v) {
  return static_cast<float>(v);
}

// Calls fn(T{}, std::integral_constant<int, C>{}) with the view's element
// type and its channel count when it is 1, 3 or 4 (0 = any other count).
template <typename Fn>
void Dispatch(const ImageView& in, Fn&& fn) {
  auto with_channels = [&](auto t) {
    switch (in.channels) {
      case 1: return fn(t, std::integral_constant<int, 1>{});
      case 3: return fn(t, std::integral_constant<int, 3>{});
      case 4: return fn(t, std::integral_constant<int, 4>{});
      default: return fn(t, std::integral_constant<int, 0>{});
    }
  };
  switch (in.dtype) {
    case DType::kUInt8: return with_channels(uint8_t{});
    case DType::kInt32: return with_channels(int32_t{});
    case DType::kInt64: return with_channels(int64_t{});
    case DType::kFloat16: return with_channels(float16{});
    case DType::kBFloat16: return with_channels(bfloat16{});
    case DType::kFloat32: return with_channels(float{});
    case DType::kFloat64: return with_channels(double{});
    case DType::kBool:
    case DType::kString: break;  // rejected by the caller
  }
}

template <typename T>
const T* Row(const ImageView& in, int64_t b, int64_t y) {
  return static_cast<const T*>(in.data) + b * in.image_stride + y * in.row_stride;
}

// Pixel p of a row of `width` pixels of kC channels can be read as four
// lanes when that stays inside the row: always for 4 channels, for 3 when
// another pixel follows (the fourth lane is the next pixel's first channel,
// computed and then overwritten, as TF's SSE path does).
template <int kC>
inline bool FourLanes(int64_t p, int64_t width) {
  return kC == 4 || (kC == 3 && p + 1 < width);
}

// dst[x, c] = sum_k w[x][k] * src[start[x] + k, c], accumulated in tap order.
template <int kC, typename T>
void HorizontalTaps(const T* src, int64_t in_width, int64_t channels, const AxisTaps& xs,
                    float* dst) {
  const int64_t C = kC > 0 ? kC : channels;
  const int64_t n_out = xs.size();
  for (int64_t x = 0; x < n_out; ++x, dst += C) {
    const int n = xs.count[x];
    const float* w = &xs.weights[x * xs.max_taps];
    const T* s = src + xs.start[x] * C;
    if (n == 0) {
      std::fill(dst, dst + C, 0.0f);
      continue;
    }
    if constexpr (kC == 3 || kC == 4) {
      if (FourLanes<kC>(xs.start[x] + n - 1, in_width) && FourLanes<kC>(x, n_out)) {
        F4 acc = Splat(w[0]) * Load4AsF4(s);
        for (int k = 1; k < n; ++k) acc += Splat(w[k]) * Load4AsF4(s + k * C);
        StoreF4(dst, acc);
        continue;
      }
    }
    for (int64_t c = 0; c < C; ++c) dst[c] = w[0] * F(s[c]);
    for (int k = 1; k < n; ++k) {
      const T* sk = s + k * C;
      for (int64_t c = 0; c < C; ++c) dst[c] += w[k] * F(sk[c]);
    }
  }
}

// dst[i] = sum_k w[k] * rows[k][i], accumulated in tap order.
template <typename T>
void VerticalTaps(const T* const* rows, const float* w, int n, int64_t len, float* dst) {
  if (n == 0) {
    std::fill(dst, dst + len, 0.0f);
    return;
  }
  int64_t i = 0;
  for (; i + 4 <= len; i += 4) {
    F4 acc = Splat(w[0]) * Load4AsF4(rows[0] + i);
    for (int k = 1; k < n; ++k) acc += Splat(w[k]) * Load4AsF4(rows[k] + i);
    StoreF4(dst + i, acc);
  }
  for (; i < len; ++i) {
    float acc = w[0] * F(rows[0][i]);
    for (int k = 1; k < n; ++k) acc += w[k] * F(rows[k][i]);
    dst[i] = acc;
  }
}

// dst[i] = w * row[i] (first) or dst[i] += w * row[i].
void AccumulateRow(const float* row, float w, bool first, int64_t len, float* dst) {
  int64_t i = 0;
  const F4 vw = Splat(w);
  if (first) {
    for (; i + 4 <= len; i += 4) StoreF4(dst + i, vw * LoadF4(row + i));
    for (; i < len; ++i) dst[i] = w * row[i];
  } else {
    for (; i + 4 <= len; i += 4) StoreF4(dst + i, LoadF4(dst + i) + vw * LoadF4(row + i));
    for (; i < len; ++i) dst[i] += w * row[i];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// LerpRows' vector loop in 8 lanes (AVX2, not FMA: the same roundings);
// returns how far it got.
__attribute__((target("avx2"))) int64_t LerpRowsAvx2(const float* top, const float* bottom, float l,
                                                     int64_t len, float* out) {
  const __m256 vl = _mm256_set1_ps(l);
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const __m256 t = _mm256_loadu_ps(top + i);
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(bottom + i), t);
    _mm256_storeu_ps(out + i, _mm256_add_ps(t, _mm256_mul_ps(d, vl)));
  }
  return i;
}
#endif

// out[i] = top[i] + (bottom[i] - top[i]) * l.
void LerpRows(const float* top, const float* bottom, float l, int64_t len, float* out) {
  int64_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (CpuHasAvx2()) i = LerpRowsAvx2(top, bottom, l, len, out);
#endif
  const F4 vl = Splat(l);
  for (; i + 4 <= len; i += 4) {
    const F4 t = LoadF4(top + i);
    StoreF4(out + i, t + (LoadF4(bottom + i) - t) * vl);
  }
  for (; i < len; ++i) out[i] = top[i] + (bottom[i] - top[i]) * l;
}

void ScaleRow(float s, int64_t len, float* row) {
  int64_t i = 0;
  for (; i + 4 <= len; i += 4) StoreF4(row + i, LoadF4(row + i) * Splat(s));
  for (; i < len; ++i) row[i] *= s;
}

template <int kC, typename T>
void HorizontalLerp(const T* src, int64_t in_width, int64_t channels, const LerpTaps& xs,
                    float* dst) {
  const int64_t C = kC > 0 ? kC : channels;
  const int64_t n = static_cast<int64_t>(xs.lerp.size());
  for (int64_t x = 0; x < n; ++x, dst += C) {
    const T* a = src + xs.lower[x] * C;
    const T* b = src + xs.upper[x] * C;
    const float l = xs.lerp[x];
    if constexpr (kC == 3 || kC == 4) {
      if (FourLanes<kC>(xs.upper[x], in_width) && FourLanes<kC>(x, n)) {
        const F4 fa = Load4AsF4(a);
        StoreF4(dst, fa + (Load4AsF4(b) - fa) * Splat(l));
        continue;
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      const float fa = F(a[c]);
      dst[c] = fa + (F(b[c]) - fa) * l;
    }
  }
}

// A few rows of horizontally resampled input, keyed by input row: row r
// lives in slot r % slots, so up to `slots` consecutive rows are held at
// once and a row is computed again only if it was evicted.
class RowRing {
 public:
  // Each slot has 4 floats of slack after its row_len (kernels may write
  // one vector past their last pixel).
  RowRing(int slots, int64_t row_len)
      : stride_(row_len + 4), tags_(slots, -1), data_(slots * stride_) {}
  void Reset() { std::fill(tags_.begin(), tags_.end(), -1); }
  // The slot for input row `r`; *fresh tells whether it must be computed.
  float* Get(int64_t r, bool* fresh) {
    const size_t slot = static_cast<size_t>(r) % tags_.size();
    *fresh = tags_[slot] != r;
    tags_[slot] = r;
    return &data_[slot * stride_];
  }

 private:
  int64_t stride_;
  std::vector<int64_t> tags_;
  std::vector<float> data_;
};

template <int kPixelBytes>
void GatherPixels(const uint8_t* src, const int32_t* xs, int64_t n, int64_t pixel_bytes,
                  uint8_t* dst) {
  const int64_t P = kPixelBytes > 0 ? kPixelBytes : pixel_bytes;
  for (int64_t x = 0; x < n; ++x) std::memcpy(dst + x * P, src + xs[x] * P, P);
}

}  // namespace

void ResizeNearest(const ImageView& in, const std::vector<int32_t>& ys,
                   const std::vector<int32_t>& xs, void* out) {
  const int64_t esize = static_cast<int64_t>(DTypeSize(in.dtype));
  const int64_t pixel = in.channels * esize;
  const int64_t out_w = static_cast<int64_t>(xs.size());
  auto* dst = static_cast<uint8_t*>(out);
  const auto* base = static_cast<const uint8_t*>(in.data);
  for (int64_t b = 0; b < in.batch; ++b) {
    for (size_t y = 0; y < ys.size(); ++y, dst += out_w * pixel) {
      const uint8_t* src = base + (b * in.image_stride + ys[y] * in.row_stride) * esize;
      switch (pixel) {
        case 1: GatherPixels<1>(src, xs.data(), out_w, pixel, dst); break;
        case 3: GatherPixels<3>(src, xs.data(), out_w, pixel, dst); break;
        case 4: GatherPixels<4>(src, xs.data(), out_w, pixel, dst); break;
        case 12: GatherPixels<12>(src, xs.data(), out_w, pixel, dst); break;
        case 16: GatherPixels<16>(src, xs.data(), out_w, pixel, dst); break;
        default: GatherPixels<0>(src, xs.data(), out_w, pixel, dst); break;
      }
    }
  }
}

void ResizeBilinear(const ImageView& in, const LerpTaps& ys, const LerpTaps& xs, float* out) {
  Dispatch(in, [&](auto t, auto kc) {
    using T = decltype(t);
    constexpr int kC = decltype(kc)::value;
    const int64_t len = static_cast<int64_t>(xs.lerp.size()) * in.channels;
    RowRing ring(2, len);
    // uint8 RGB (decoded images) has its own horizontal loop.
    constexpr bool kRgb8 = std::is_same_v<T, uint8_t> && kC == 3;
    RgbLerpPlan rgb;
    if constexpr (kRgb8) rgb = MakeRgbLerpPlan(xs, in.width);
    auto horizontal = [&](const T* src, float* dst) {
      if constexpr (kRgb8) {
        LerpRgbRow(src, rgb, dst);
      } else {
        HorizontalLerp<kC>(src, in.width, in.channels, xs, dst);
      }
    };
    for (int64_t b = 0; b < in.batch; ++b) {
      ring.Reset();
      for (size_t y = 0; y < ys.lerp.size(); ++y, out += len) {
        bool fresh;
        float* top = ring.Get(ys.lower[y], &fresh);
        if (fresh) horizontal(Row<T>(in, b, ys.lower[y]), top);
        float* bottom = ring.Get(ys.upper[y], &fresh);
        if (fresh) horizontal(Row<T>(in, b, ys.upper[y]), bottom);
        LerpRows(top, bottom, ys.lerp[y], len, out);
      }
    }
  });
}

void ResizeVerticalFirst(const ImageView& in, const AxisTaps& ys, const AxisTaps& xs, float* out) {
  Dispatch(in, [&](auto t, auto kc) {
    using T = decltype(t);
    constexpr int kC = decltype(kc)::value;
    const int64_t in_len = in.width * in.channels;
    const int64_t out_len = xs.size() * in.channels;
    std::vector<float> column(in_len);
    std::vector<const T*> rows(std::max(ys.max_taps, 1));
    for (int64_t b = 0; b < in.batch; ++b) {
      for (int64_t y = 0; y < ys.size(); ++y, out += out_len) {
        const int n = ys.count[y];
        for (int k = 0; k < n; ++k) rows[k] = Row<T>(in, b, ys.start[y] + k);
        VerticalTaps(rows.data(), &ys.weights[y * ys.max_taps], n, in_len, column.data());
        HorizontalTaps<kC>(column.data(), in.width, in.channels, xs, out);
      }
    }
  });
}

void ResizeHorizontalFirst(const ImageView& in, const AxisTaps& ys, const AxisTaps& xs,
                           float post_scale, float* out) {
  Dispatch(in, [&](auto t, auto kc) {
    using T = decltype(t);
    constexpr int kC = decltype(kc)::value;
    const int64_t len = xs.size() * in.channels;
    // Rows are accumulated into the output one at a time (the same order of
    // operations as summing them at once), so two cached rows suffice:
    // consecutive output rows share at most their boundary input row.
    RowRing ring(2, len);
    for (int64_t b = 0; b < in.batch; ++b) {
      ring.Reset();
      for (int64_t y = 0; y < ys.size(); ++y, out += len) {
        const int n = ys.count[y];
        const float* w = &ys.weights[y * ys.max_taps];
        if (n == 0) std::fill(out, out + len, 0.0f);
        for (int k = 0; k < n; ++k) {
          const int64_t r = ys.start[y] + k;
          bool fresh;
          float* row = ring.Get(r, &fresh);
          if (fresh) HorizontalTaps<kC>(Row<T>(in, b, r), in.width, in.channels, xs, row);
          AccumulateRow(row, w[k], k == 0, len, out);
        }
        ScaleRow(post_scale, len, out);
      }
    }
  });
}

void CastToFloat(const ImageView& in, float* out) {
  Dispatch(in, [&](auto t, auto) {
    using T = decltype(t);
    const int64_t len = in.width * in.channels;
    for (int64_t b = 0; b < in.batch; ++b) {
      for (int64_t y = 0; y < in.height; ++y, out += len) {
        const T* src = Row<T>(in, b, y);
        int64_t i = 0;
        for (; i + 4 <= len; i += 4) StoreF4(out + i, Load4AsF4(src + i));
        for (; i < len; ++i) out[i] = F(src[i]);
      }
    }
  });
}

BilinearRowStream::BilinearRowStream(int64_t in_width, int64_t channels, LerpTaps ys, LerpTaps xs)
    : in_width_(in_width),
      channels_(channels),
      out_height_(static_cast<int64_t>(ys.lerp.size())),
      len_(static_cast<int64_t>(xs.lerp.size()) * channels),
      stride_(len_ + 4),  // kernels may write one vector past the row
      ys_(std::move(ys)),
      xs_(std::move(xs)),
      rows_(static_cast<size_t>(2 * stride_)) {
  if (channels_ == 3) rgb_ = MakeRgbLerpPlan(xs_, in_width_);
}

void BilinearRowStream::Push(int64_t r, const uint8_t* src) {
  last_ = r;
  // Output rows not taken yet have upper >= r; r is needed if one of them
  // (the first few: taps are non-decreasing) has it as lower or upper.
  bool needed = false;
  for (int64_t y = next_; y < out_height_ && ys_.lower[static_cast<size_t>(y)] <= r; ++y) {
    const auto i = static_cast<size_t>(y);
    if (ys_.lower[i] == r || ys_.upper[i] == r) {
      needed = true;
      break;
    }
  }
  if (!needed) return;
  float* dst = Slot(r);
  if (channels_ == 3) {
    LerpRgbRow(src, rgb_, dst);
  } else {
    HorizontalLerp<1>(src, in_width_, 1, xs_, dst);
  }
}

int64_t BilinearRowStream::Take(float* dst) {
  const auto i = static_cast<size_t>(next_);
  // Both rows are the last two pushed (Ready: upper <= last; every output
  // row with upper < last was taken before last arrived).
  const float* top = Slot(ys_.lower[i]);
  const float* bottom = Slot(ys_.upper[i]);
  LerpRows(top, bottom, ys_.lerp[i], len_, dst);
  return next_++;
}

}  // namespace sluice::ops_internal
