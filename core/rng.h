// Rng: a counter-based random generator (Philox4x32-10, Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", SC'11).
//
// Each (seed, stream) pair names an independent sequence, and any position
// in it can be computed without the ones before. Pipelines derive one stream
// per element, Rng(seed, element_index), so random augmentations give the
// same result whatever the parallelism or the order of execution.
//
// Satisfies std::uniform_random_bit_generator (usable with std::shuffle).
// Not thread-safe: give each thread its own Rng (they are cheap: 40 bytes of
// state, no allocation).
#ifndef SLUICE_CORE_RNG_H_
#define SLUICE_CORE_RNG_H_

#include <array>
#include <cstdint>
#include <limits>

namespace sluice {

class Rng {
 public:
  using result_type = uint32_t;

  // The stream `stream` of the generator seeded with `seed`.
  explicit Rng(uint64_t seed, uint64_t stream = 0);

  // The raw Philox4x32-10 block function: 4 words of output for a 128-bit
  // counter and a 64-bit key. Pure; matches the Random123 known answers.
  static std::array<uint32_t, 4> Philox(std::array<uint32_t, 4> counter,
                                        std::array<uint32_t, 2> key);

  // A generator independent of this one and of every other (seed, stream),
  // derived from this generator's seed and stream and `id`. Does not advance
  // this generator.
  Rng Fork(uint64_t id) const;

  uint32_t NextU32();
  uint64_t NextU64();
  result_type operator()() { return NextU32(); }
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<uint32_t>::max(); }

  // Uniform in [0, 1), 24 (float) or 53 (double) random bits.
  float UniformFloat();
  double UniformDouble();
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) { return lo + (hi - lo) * UniformFloat(); }
  // Uniform integer in [0, n) without modulo bias. REQUIRES: n > 0.
  uint64_t UniformInt(uint64_t n);
  // Standard normal (Box-Muller).
  double Normal();

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }

 private:
  void Refill();

  uint64_t seed_;
  uint64_t stream_;
  uint64_t block_ = 0;  // next counter block to generate
  std::array<uint32_t, 4> out_{};
  int used_ = 4;  // words of out_ already handed out
};

}  // namespace sluice

#endif  // SLUICE_CORE_RNG_H_
