#include "sluice/ops/internal/bilinear_rgb8.h"

#include <algorithm>

#include "sluice/ops/internal/simd.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SLUICE_BILINEAR_AVX2 1
#endif

namespace sluice::ops_internal {
namespace {

#if SLUICE_BILINEAR_AVX2
// Eight pixels (24 floats, three vectors) per group: two masked loads bring
// the group's 64 bytes, and for each vector one zero-masking two-source byte
// permute places the left (a) and right (b) neighbors' bytes in the two
// 16-bit halves of each 32-bit lane; a multiply-add of the halves by -1 and
// 1 gives b - a exactly, as the float subtraction of TF's lerp would. FMA
// contraction is off (CMakeLists.txt), so the multiply and the add round
// separately as in TF's kernel.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) int64_t LerpRgbGroupsVbmi(
    const uint8_t* src, const RgbLerpPlan& plan, float* dst) {
  const RgbGroup* g = plan.group.data();
  const float* lerp = plan.lerp3.data();
  const int64_t groups = static_cast<int64_t>(plan.group.size());
  constexpr __mmask32 kHalfLowBytes = 0x55555555;
  const __m256i minus_a_plus_b = _mm256_set1_epi32(0x0001FFFF);
  const __m256i low_half = _mm256_set1_epi32(0xFFFF);
  for (int64_t i = 0; i < groups; ++i, ++g, dst += 24, lerp += 24) {
    const uint8_t* p = src + g->base;
    // Masked loads (slower) only where the 64 bytes pass the row's end.
    __m256i lo, hi;
    if (i < plan.unmasked_groups) {
      lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    } else {
      lo = _mm256_maskz_loadu_epi8(g->mask_lo, p);
      hi = _mm256_maskz_loadu_epi8(g->mask_hi, p + 32);
    }
    for (int k = 0; k < 3; ++k) {
      // Index bytes a, 0, b, 0 per lane; the zeros' bytes are masked off.
      const __m256i index =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g->ab + 16 * k)));
      const __m256i ab = _mm256_maskz_permutex2var_epi8(kHalfLowBytes, lo, index, hi);
      const __m256 a = _mm256_cvtepi32_ps(_mm256_and_si256(ab, low_half));
      const __m256 diff = _mm256_cvtepi32_ps(_mm256_madd_epi16(ab, minus_a_plus_b));
      const __m256 l = _mm256_loadu_ps(lerp + 8 * k);
      _mm256_storeu_ps(dst + 8 * k, _mm256_add_ps(a, _mm256_mul_ps(diff, l)));
    }
  }
  return 8 * groups;
}
#endif

#if SLUICE_BILINEAR_AVX2
// Eight output floats per step: two 16-byte loads, each broadcast to both
// 128-bit lanes, shuffled (vpshufb) so that each 32-bit lane holds the left
// and right neighbors' bytes in its two 16-bit halves; then as the VBMI
// loop. Returns the first pixel not wholly written.
__attribute__((target("avx2"))) int64_t LerpRgbVectorsAvx2(const uint8_t* src,
                                                           const RgbLerpPlan& plan, float* dst) {
  const RgbVector* v = plan.vectors.data();
  const float* lerp = plan.lerp3.data();
  const int64_t vectors = static_cast<int64_t>(plan.vectors.size());
  const __m256i minus_a_plus_b = _mm256_set1_epi32(0x0001FFFF);
  const __m256i low_half = _mm256_set1_epi32(0xFFFF);
  for (int64_t i = 0; i < vectors; ++i, ++v) {
    const uint8_t* p = src + v->base;
    const __m256i lo =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i hi =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
    const __m256i ab = _mm256_or_si256(
        _mm256_shuffle_epi8(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v->lo))),
        _mm256_shuffle_epi8(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v->hi))));
    const __m256 a = _mm256_cvtepi32_ps(_mm256_and_si256(ab, low_half));
    const __m256 diff = _mm256_cvtepi32_ps(_mm256_madd_epi16(ab, minus_a_plus_b));
    const __m256 l = _mm256_loadu_ps(lerp + 8 * i);
    _mm256_storeu_ps(dst + 8 * i, _mm256_add_ps(a, _mm256_mul_ps(diff, l)));
  }
  return 8 * vectors / 3;
}
#endif

// The vectors of eight output floats from the left edge whose neighbors lie
// in 32 bytes inside the row, up to the first that do not.
void PlanVectors(const LerpTaps& taps, int64_t in_width, RgbLerpPlan* plan) {
  const int64_t row_bytes = 3 * in_width;
  const int64_t floats = 3 * static_cast<int64_t>(taps.lerp.size());
  plan->vectors.resize(static_cast<size_t>(floats / 8));
  plan->lerp3.resize(static_cast<size_t>(floats / 8 * 8));
  int64_t vectors = 0;
  for (; vectors < floats / 8; ++vectors) {
    RgbVector& v = plan->vectors[vectors];
    const int64_t base = 3 * static_cast<int64_t>(taps.lower[8 * vectors / 3]);
    if (base + 32 > row_bytes) break;
    bool fits = true;
    for (int64_t d = 0; d < 8; ++d) {
      const int64_t j = 8 * vectors + d, x = j / 3, c = j % 3;
      // lower never decreases, so a >= 0.
      const int64_t a = 3 * static_cast<int64_t>(taps.lower[x]) + c - base;
      const int64_t b = 3 * static_cast<int64_t>(taps.upper[x]) + c - base;
      fits = fits && a < 32 && b < 32;
      const auto half = [](int64_t at, bool first) {
        return static_cast<uint8_t>((at < 16) == first ? at % 16 : 0x80);
      };
      v.lo[4 * d] = half(a, true);
      v.lo[4 * d + 2] = half(b, true);
      v.hi[4 * d] = half(a, false);
      v.hi[4 * d + 2] = half(b, false);
      v.lo[4 * d + 1] = v.lo[4 * d + 3] = v.hi[4 * d + 1] = v.hi[4 * d + 3] = 0x80;
      plan->lerp3[j] = taps.lerp[x];
    }
    if (!fits) break;
    v.base = static_cast<int32_t>(base);
  }
  plan->vectors.resize(static_cast<size_t>(vectors));
  plan->lerp3.resize(static_cast<size_t>(8 * vectors));
}

// The groups of eight pixels from the left edge whose neighbors fit in 64
// bytes, up to the first that does not (large downscales).
void PlanGroups(const LerpTaps& taps, int64_t in_width, RgbLerpPlan* plan) {
  const int64_t row_bytes = 3 * in_width;
  const int64_t n = static_cast<int64_t>(taps.lerp.size());
  plan->group.resize(static_cast<size_t>(n / 8));
  plan->lerp3.resize(static_cast<size_t>(n / 8 * 24));
  int64_t groups = 0;
  for (; groups < n / 8; ++groups) {
    RgbGroup& g = plan->group[groups];
    const int64_t x0 = 8 * groups;
    const int64_t base = 3 * static_cast<int64_t>(taps.lower[x0]);
    bool fits = true;
    for (int64_t i = 0; i < 8; ++i) {
      // lower never decreases, so a >= 0.
      const int64_t a = 3 * static_cast<int64_t>(taps.lower[x0 + i]) - base;
      const int64_t b = 3 * static_cast<int64_t>(taps.upper[x0 + i]) - base;
      fits = fits && a + 2 < 64 && b + 2 < 64;
      for (int c = 0; c < 3; ++c) {
        g.ab[2 * (3 * i + c)] = static_cast<uint8_t>(a + c);
        g.ab[2 * (3 * i + c) + 1] = static_cast<uint8_t>(b + c);
        plan->lerp3[24 * groups + 3 * i + c] = taps.lerp[x0 + i];
      }
    }
    if (!fits) break;
    const int64_t valid = std::min<int64_t>(64, row_bytes - base);
    auto mask = [](int64_t bytes) {
      return bytes >= 32 ? ~uint32_t{0} : bytes <= 0 ? 0u : (uint32_t{1} << bytes) - 1;
    };
    if (valid == 64) plan->unmasked_groups = groups + 1;
    g.base = static_cast<int32_t>(base);
    g.mask_lo = mask(valid);
    g.mask_hi = mask(valid - 32);
  }
  plan->group.resize(static_cast<size_t>(groups));
  plan->lerp3.resize(static_cast<size_t>(24 * groups));
}

#if SLUICE_BILINEAR_AVX2
// Two pixels per step in 8 lanes: the SSE2 loop's steps side by side
// (AVX2 widens and shifts per 128-bit half). Compiled for AVX2 only, not
// FMA, so the multiply and the add round separately as in TF's kernel.
__attribute__((target("avx2"))) int64_t LerpRgbPairsAvx2(const uint8_t* src,
                                                         const RgbLerpPlan& plan, int64_t x,
                                                         float* dst) {
  const int32_t* offset = plan.offset.data();
  const float* lerp4 = plan.lerp4.data();
  const __m256i zero = _mm256_setzero_si256();
  const int64_t fast = plan.fast;  // a local: the stores below may alias anything
  for (; x + 2 <= fast; x += 2) {
    const __m128i p0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + offset[x]));
    const __m128i p1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + offset[x + 1]));
    const __m256i words = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(p0, p1));
    const __m256 a = _mm256_cvtepi32_ps(_mm256_unpacklo_epi16(words, zero));
    const __m256 b = _mm256_cvtepi32_ps(_mm256_unpacklo_epi16(_mm256_srli_si256(words, 6), zero));
    const __m256 l = _mm256_loadu_ps(lerp4 + 4 * x);
    const __m256 r = _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), l));
    _mm_storeu_ps(dst + 3 * x, _mm256_castps256_ps128(r));
    _mm_storeu_ps(dst + 3 * x + 3, _mm256_extractf128_ps(r, 1));
  }
  return x;
}
#endif

}  // namespace

RgbLerpPlan MakeRgbLerpPlan(const LerpTaps& taps, int64_t in_width) {
  RgbLerpPlan plan;
  plan.taps = &taps;
  const int64_t n = static_cast<int64_t>(taps.lerp.size());
  // An 8-byte read at 3 * lower stays inside a row of 3 * in_width bytes
  // while lower <= in_width - 3; lower never decreases, so the pixels that
  // qualify come first.
  while (plan.fast < n && taps.lower[plan.fast] + 3 <= in_width) ++plan.fast;
  plan.offset.resize(static_cast<size_t>(plan.fast));
  plan.lerp4.resize(static_cast<size_t>(4 * plan.fast));
  for (int64_t x = 0; x < plan.fast; ++x) {
    // Where both neighbors are the same pixel, a + (a - a) * l is a; so is
    // a + (b - a) * 0 with b the next pixel, which the fast loop reads.
    const float l = taps.upper[x] == taps.lower[x] ? 0.0f : taps.lerp[x];
    plan.offset[x] = 3 * taps.lower[x];
    for (int k = 0; k < 4; ++k) plan.lerp4[4 * x + k] = l;
  }
  if (CpuHasAvx512Vbmi()) {
    PlanGroups(taps, in_width, &plan);
  } else if (CpuHasAvx2()) {
    PlanVectors(taps, in_width, &plan);
  }
  return plan;
}

void LerpRgbRow(const uint8_t* src, const RgbLerpPlan& plan, float* dst) {
  const int32_t* offset = plan.offset.data();
  const float* lerp4 = plan.lerp4.data();
  int64_t x = 0;
#if SLUICE_BILINEAR_AVX2
  if (!plan.group.empty()) {
    x = LerpRgbGroupsVbmi(src, plan, dst);
  } else if (!plan.vectors.empty()) {
    x = LerpRgbVectorsAvx2(src, plan, dst);
  }
  if (CpuHasAvx2()) x = LerpRgbPairsAvx2(src, plan, x, dst);
#endif
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  const int64_t fast = plan.fast;  // a local: the stores below may alias anything
  for (; x < fast; ++x) {
    // Bytes 0-2: the left pixel, 3-5: the right one; as 16-bit words, the
    // right pixel's start 6 bytes in. The fourth lane of each (the next
    // pixel's first channel) lands one float past this pixel and is
    // overwritten by the next one.
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + offset[x]));
    const __m128i words = _mm_unpacklo_epi8(bytes, zero);
    const __m128 a = _mm_cvtepi32_ps(_mm_unpacklo_epi16(words, zero));
    const __m128 b = _mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_srli_si128(words, 6), zero));
    const __m128 l = _mm_loadu_ps(lerp4 + 4 * x);
    _mm_storeu_ps(dst + 3 * x, _mm_add_ps(a, _mm_mul_ps(_mm_sub_ps(b, a), l)));
  }
#else
  for (; x < plan.fast; ++x) {
    const uint8_t* p = src + offset[x];
    const float l = lerp4[4 * x];
    for (int c = 0; c < 3; ++c) {
      const float a = static_cast<float>(p[c]);
      dst[3 * x + c] = a + (static_cast<float>(p[3 + c]) - a) * l;
    }
  }
#endif
  const LerpTaps& t = *plan.taps;
  const int64_t n = static_cast<int64_t>(t.lerp.size());
  for (; x < n; ++x) {
    const uint8_t* pa = src + 3 * static_cast<int64_t>(t.lower[x]);
    const uint8_t* pb = src + 3 * static_cast<int64_t>(t.upper[x]);
    for (int c = 0; c < 3; ++c) {
      const float a = static_cast<float>(pa[c]);
      dst[3 * x + c] = a + (static_cast<float>(pb[c]) - a) * t.lerp[x];
    }
  }
}

}  // namespace sluice::ops_internal
