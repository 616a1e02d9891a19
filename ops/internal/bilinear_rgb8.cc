#include "sluice/ops/internal/bilinear_rgb8.h"

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
// Two pixels per step in 8 lanes: the SSE2 loop's steps side by side
// (AVX2 widens and shifts per 128-bit half). Compiled for AVX2 only, not
// FMA, so the multiply and the add round separately as in TF's kernel.
__attribute__((target("avx2"))) int64_t LerpRgbPairsAvx2(const uint8_t* src,
                                                         const RgbLerpPlan& plan, float* dst) {
  const int32_t* offset = plan.offset.data();
  const float* lerp4 = plan.lerp4.data();
  const __m256i zero = _mm256_setzero_si256();
  const int64_t fast = plan.fast;  // a local: the stores below may alias anything
  int64_t x = 0;
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
  plan.offset.reserve(n);
  plan.lerp4.reserve(4 * n);
  // An 8-byte read at 3 * lower stays inside a row of 3 * in_width bytes
  // while lower <= in_width - 3; lower never decreases, so the pixels that
  // qualify come first.
  for (int64_t x = 0; x < n && taps.lower[x] + 3 <= in_width; ++x) {
    // Where both neighbors are the same pixel, a + (a - a) * l is a; so is
    // a + (b - a) * 0 with b the next pixel, which the fast loop reads.
    const float l = taps.upper[x] == taps.lower[x] ? 0.0f : taps.lerp[x];
    plan.offset.push_back(3 * taps.lower[x]);
    for (int k = 0; k < 4; ++k) plan.lerp4.push_back(l);
    plan.fast = x + 1;
  }
  return plan;
}

void LerpRgbRow(const uint8_t* src, const RgbLerpPlan& plan, float* dst) {
  const int32_t* offset = plan.offset.data();
  const float* lerp4 = plan.lerp4.data();
  int64_t x = 0;
#if SLUICE_BILINEAR_AVX2
  if (CpuHasAvx2()) x = LerpRgbPairsAvx2(src, plan, dst);
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
