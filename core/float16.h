// float16 (IEEE 754 binary16) and bfloat16 storage types.
//
// Plain 2-byte values with conversions to and from float: float -> 16 bit
// rounds to nearest even, NaN stays NaN, overflow becomes infinity. No
// arithmetic operators: convert to float to compute. Trivially copyable;
// thread-safety is that of any value.
#ifndef SLUICE_CORE_FLOAT16_H_
#define SLUICE_CORE_FLOAT16_H_

#include <bit>
#include <cstdint>

namespace sluice {

struct float16 {
  uint16_t bits = 0;

  float16() = default;
  explicit float16(float f) : bits(FromFloat(f)) {}
  static float16 FromBits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
  explicit operator float() const { return ToFloat(bits); }
  friend bool operator==(float16 a, float16 b) { return a.bits == b.bits; }

  static uint16_t FromFloat(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or NaN
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
      // Scale into half's subnormal range by adding 0.5 and letting the FPU round.
      const float magic = std::bit_cast<float>(0x3f000000u);  // 0.5
      const float v = std::bit_cast<float>(abs) + magic;
      return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u));
    }
    // Normal: rebias exponent (127 -> 15) and round mantissa 23 -> 10 bits, ties to even.
    const uint32_t odd = (abs >> 13) & 1u;
    const uint32_t rounded = abs + 0xc8000fffu + odd;  // -(112 << 23) + 0xfff + odd
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {  // zero or subnormal: man * 2^-24
      const float v = static_cast<float>(man) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
  }
};

struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  explicit bfloat16(float f) : bits(FromFloat(f)) {}
  static bfloat16 FromBits(uint16_t b) {
    bfloat16 v;
    v.bits = b;
    return v;
  }
  explicit operator float() const {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
  }
  friend bool operator==(bfloat16 a, bfloat16 b) { return a.bits == b.bits; }

  static uint16_t FromFloat(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
      return static_cast<uint16_t>((x >> 16) | 0x40u);     // quiet NaN
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // ties to even
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

}  // namespace sluice

#endif  // SLUICE_CORE_FLOAT16_H_
