// IndexPermutation: a pseudo-random permutation of [0, n) computed one index
// at a time, in O(1) memory, for a global shuffle whose memory does not grow
// with the dataset.
//
// perm(i) is a keyed Feistel network on the smallest power-of-two domain
// that holds n, with cycle-walking to stay inside [0, n): the network is a
// bijection of the domain, so applying it again to any value outside [0, n)
// eventually lands back inside, and the result is a bijection of [0, n).
// The halves may differ by one bit (an unbalanced network, each round xors
// one half with a keyed mix of the other), so the domain is less than 2n and
// a lookup takes fewer than two network evaluations on average. Round keys
// are derived from (seed, n) with Philox4x32-10 (core/rng.h): the same seed
// and n give the same permutation on every platform and run.
//
// Not a cryptographic permutation; statistically it behaves like a random
// one for shuffling (see tests/core/index_permutation_test.cc).
//
// An immutable value of 224 bytes, no allocation: cheap to copy,
// thread-safe. A lookup costs a few tens of nanoseconds.
#ifndef SLUICE_CORE_INDEX_PERMUTATION_H_
#define SLUICE_CORE_INDEX_PERMUTATION_H_

#include <array>
#include <cstdint>

namespace sluice {

class IndexPermutation {
 public:
  // Half-rounds (each updates one half of the state). Large domains are
  // statistically indistinguishable from uniform after 6; halves of a few
  // bits need many more (with 12, the joint law of (perm(0), perm(1)) for
  // n = 8 is measurably off), and their lookups are few, so domains of up to
  // kSmallDomainBits bits get kSmallDomainRounds.
  static constexpr int kRounds = 12;
  static constexpr int kSmallDomainBits = 8;
  static constexpr int kSmallDomainRounds = 24;

  // A permutation of [0, n) chosen by `seed`. n may be 0 (nothing to permute).
  IndexPermutation(uint64_t n, uint64_t seed);

  // The position i maps to.
  // REQUIRES: i < size().
  uint64_t operator()(uint64_t i) const;

  uint64_t size() const { return n_; }

 private:
  // One evaluation of the Feistel network on the power-of-two domain.
  uint64_t Encrypt(uint64_t x) const;

  uint64_t n_;
  int rounds_ = kRounds;
  int right_bits_ = 0;  // the low half; the high half has the rest
  uint64_t left_mask_ = 0;
  uint64_t right_mask_ = 0;
  std::array<uint64_t, kSmallDomainRounds> keys_{};
};

}  // namespace sluice

#endif  // SLUICE_CORE_INDEX_PERMUTATION_H_
