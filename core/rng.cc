#include "sluice/core/rng.h"

#include <cmath>

namespace sluice {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// SplitMix64 finalizer: spreads a seed so nearby seeds give unrelated keys.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::array<uint32_t, 4> Rng::Philox(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, ctr[0], &hi0, &lo0);
    MulHiLo(kMul1, ctr[2], &hi1, &lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

Rng::Rng(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}

Rng Rng::Fork(uint64_t id) const {
  // A new key from (seed, stream, id); the counter space of the child starts
  // fresh, so children never overlap their parent's key.
  return Rng(Mix64(seed_ ^ Mix64(stream_ + 0x9E3779B97F4A7C15ull) ^ Mix64(~id)), stream_);
}

void Rng::Refill() {
  // Counter = (block, stream); key = mixed seed.
  const uint64_t k = Mix64(seed_);
  out_ = Philox({static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32),
                 static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)});
  ++block_;
  used_ = 0;
}

uint32_t Rng::NextU32() {
  if (used_ == 4) Refill();
  return out_[used_++];
}

uint64_t Rng::NextU64() {
  const uint64_t hi = NextU32();
  return (hi << 32) | NextU32();
}

float Rng::UniformFloat() { return static_cast<float>(NextU32() >> 8) * 0x1.0p-24f; }

double Rng::UniformDouble() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

uint64_t Rng::UniformInt(uint64_t n) {
  // Lemire's nearly-divisionless method on 64-bit words.
  uint64_t x = NextU64();
  __uint128_t m = static_cast<__uint128_t>(x) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      x = NextU64();
      m = static_cast<__uint128_t>(x) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::Normal() {
  // Box-Muller; u1 in (0, 1] so log() is finite.
  const double u1 = 1.0 - UniformDouble();
  const double u2 = UniformDouble();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace sluice
