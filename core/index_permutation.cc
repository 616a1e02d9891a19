#include "sluice/core/index_permutation.h"

#include <bit>

#include "sluice/core/rng.h"

namespace sluice {
namespace {

// A tag in the Philox counter so these keys differ from any Rng stream.
constexpr uint32_t kKeyTag = 0x70657231;  // "per1"

// The 64-bit finalizer of SplitMix64: a bijection with full avalanche, so
// every output bit depends on every bit of `x` and the round key.
inline uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

inline uint64_t LowMask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

}  // namespace

IndexPermutation::IndexPermutation(uint64_t n, uint64_t seed) : n_(n) {
  // The domain is [0, 2^bits), the smallest power of two >= n.
  const int bits = n <= 1 ? 0 : std::bit_width(n - 1);
  rounds_ = bits <= kSmallDomainBits ? kSmallDomainRounds : kRounds;
  right_bits_ = bits - bits / 2;
  right_mask_ = LowMask(right_bits_);
  left_mask_ = LowMask(bits / 2);
  // Keys depend on n too, so permutations of different sizes under one seed
  // are unrelated.
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed),
                                       static_cast<uint32_t>(seed >> 32)};
  for (int r = 0; r < rounds_; r += 2) {
    const std::array<uint32_t, 4> out =
        Rng::Philox({static_cast<uint32_t>(r), kKeyTag, static_cast<uint32_t>(n),
                     static_cast<uint32_t>(n >> 32)},
                    key);
    keys_[r] = (uint64_t{out[1]} << 32) | out[0];
    keys_[r + 1] = (uint64_t{out[3]} << 32) | out[2];
  }
}

uint64_t IndexPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> right_bits_;  // right_bits_ <= 32
  uint64_t right = x & right_mask_;
  // Each round xors one half with a keyed function of the other: invertible
  // whatever the function, so the whole network is a bijection.
  for (int r = 0; r < rounds_; r += 2) {
    left ^= Mix(right ^ keys_[r]) & left_mask_;
    right ^= Mix(left ^ keys_[r + 1]) & right_mask_;
  }
  return (left << right_bits_) | right;
}

uint64_t IndexPermutation::operator()(uint64_t i) const {
  // Cycle-walking: i lies on a cycle of the network's permutation, which
  // returns to [0, n) after leaving it. The domain is under 2n, so the
  // expected number of steps is under 2.
  uint64_t x = Encrypt(i);
  while (x >= n_) x = Encrypt(x);
  return x;
}

}  // namespace sluice
