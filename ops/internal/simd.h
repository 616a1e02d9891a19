// Four-lane float vectors for the image kernels of ops/, written with the
// GCC/Clang vector extension (SSE2 on x86-64, NEON on ARM, plain scalar code
// elsewhere). Arithmetic is lane-wise IEEE float, so a kernel gives the same
// bits with or without them. Internal; header-only, thread-safe.
#ifndef SLUICE_OPS_INTERNAL_SIMD_H_
#define SLUICE_OPS_INTERNAL_SIMD_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sluice/core/float16.h"

namespace sluice::ops_internal {

using F4 = float __attribute__((vector_size(16)));

// Tests set this to run the SSE2 paths on an AVX2 machine (not thread-safe:
// set it only while no kernel runs).
inline bool& Avx2DisabledForTesting() {
  static bool disabled = false;
  return disabled;
}

// Whether to run AVX2 code: kernels with an AVX2 variant, compiled with
// __attribute__((target("avx2"))), check this (the CPU is asked once).
// They never enable FMA, so their results are bit-identical to the SSE2
// and scalar paths.
inline bool CpuHasAvx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has && !Avx2DisabledForTesting();
#else
  return false;
#endif
}

// Tests set this to run the AVX2 paths on a machine with AVX-512 VBMI (not
// thread-safe, as above).
inline bool& Avx512DisabledForTesting() {
  static bool disabled = false;
  return disabled;
}

// Whether to run AVX-512 VBMI code (byte permutes across two 256-bit
// registers; Ice Lake, Zen 4 and later), compiled with
// __attribute__((target(...))) like the AVX2 kernels and with FMA
// contraction off, so results stay bit-identical. Implies CpuHasAvx2().
inline bool CpuHasAvx512Vbmi() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512vbmi");
  return has && CpuHasAvx2() && !Avx512DisabledForTesting();
#else
  return false;
#endif
}

// Whether to run AVX-512 BW code (64-byte byte compares into mask
// registers; Skylake-X, Zen 4 and later); off with the flag above too.
inline bool CpuHasAvx512Bw() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return has && CpuHasAvx2() && !Avx512DisabledForTesting();
#else
  return false;
#endif
}

inline F4 Splat(float x) { return F4{x, x, x, x}; }
inline F4 LoadF4(const float* p) {
  F4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void StoreF4(float* p, F4 v) { std::memcpy(p, &v, sizeof v); }

// p[0..3] as floats. REQUIRES: four elements readable at p.
template <typename T>
inline F4 Load4AsF4(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return LoadF4(p);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
#if defined(__SSE2__)
    int32_t bytes;
    std::memcpy(&bytes, p, sizeof bytes);
    const __m128i zero = _mm_setzero_si128();
    __m128i v = _mm_unpacklo_epi8(_mm_cvtsi32_si128(bytes), zero);
    v = _mm_unpacklo_epi16(v, zero);
    return reinterpret_cast<F4>(_mm_cvtepi32_ps(v));
#else
    return F4{static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2]),
              static_cast<float>(p[3])};
#endif
  } else {
    return F4{static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2]),
              static_cast<float>(p[3])};
  }
}

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_SIMD_H_
