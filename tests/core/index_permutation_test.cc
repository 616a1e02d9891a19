#include "sluice/core/index_permutation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "sluice/core/rng.h"

namespace sluice {
namespace {

// Every value of [0, n) is hit exactly once.
void ExpectBijection(uint64_t n, uint64_t seed) {
  const IndexPermutation perm(n, seed);
  ASSERT_EQ(perm.size(), n);
  std::vector<bool> seen(n, false);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t p = perm(i);
    ASSERT_LT(p, n) << "n=" << n << " seed=" << seed << " i=" << i;
    ASSERT_FALSE(seen[p]) << "n=" << n << " seed=" << seed << ": " << p << " hit twice";
    seen[p] = true;
  }
}

std::vector<uint64_t> Materialize(const IndexPermutation& perm) {
  std::vector<uint64_t> out(perm.size());
  for (uint64_t i = 0; i < perm.size(); ++i) out[i] = perm(i);
  return out;
}

TEST(IndexPermutationTest, BijectionForManySizesAndSeeds) {
  std::vector<uint64_t> sizes = {0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 100, 1000, 1024, 4095, 4097};
  Rng rng(12345);
  for (int k = 0; k < 4; ++k) sizes.push_back(1 + rng.UniformInt(100'000));
  for (uint64_t n : sizes) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{42}, ~uint64_t{0}}) {
      ExpectBijection(n, seed);
    }
  }
}

TEST(IndexPermutationTest, EmptyAndSingleton) {
  EXPECT_EQ(IndexPermutation(0, 7).size(), 0u);
  const IndexPermutation one(1, 7);
  EXPECT_EQ(one.size(), 1u);
  EXPECT_EQ(one(0), 0u);
}

TEST(IndexPermutationTest, DeterministicAndSeedDependent) {
  const uint64_t n = 1000;
  const std::vector<uint64_t> a = Materialize(IndexPermutation(n, 7));
  EXPECT_EQ(a, Materialize(IndexPermutation(n, 7)));
  // Copies are the same permutation.
  const IndexPermutation p(n, 7);
  const IndexPermutation copy = p;
  EXPECT_EQ(Materialize(copy), a);
  // Other seeds give other permutations, and none is the identity.
  std::set<std::vector<uint64_t>> distinct = {a};
  std::vector<uint64_t> identity(n);
  for (uint64_t i = 0; i < n; ++i) identity[i] = i;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<uint64_t> b = Materialize(IndexPermutation(n, seed));
    EXPECT_NE(b, identity) << "seed " << seed;
    distinct.insert(b);
  }
  EXPECT_EQ(distinct.size(), 20u);  // seeds 0..19 (7 among them)
  // Seeds that differ only in their high half differ too.
  EXPECT_NE(Materialize(IndexPermutation(n, uint64_t{1} << 40)),
            Materialize(IndexPermutation(n, 0)));
}

// Over many seeds, where element 0 goes (and which element lands on 0) is
// uniform: a chi-square test with a loose threshold (fixed seeds, so the
// outcome is deterministic).
TEST(IndexPermutationTest, PositionOfElementZeroIsUniform) {
  for (uint64_t n : {3, 10, 37}) {
    const int kSeeds = 20000;
    std::vector<int> forward(n, 0), backward(n, 0);
    for (int s = 0; s < kSeeds; ++s) {
      const IndexPermutation perm(n, static_cast<uint64_t>(s));
      ++forward[perm(0)];
      for (uint64_t i = 0; i < n; ++i) {
        if (perm(i) == 0) ++backward[i];
      }
    }
    const double expected = static_cast<double>(kSeeds) / static_cast<double>(n);
    for (const std::vector<int>* counts : {&forward, &backward}) {
      double chi2 = 0;
      for (int c : *counts) chi2 += (c - expected) * (c - expected) / expected;
      // dof = n - 1; mean dof, sd sqrt(2 dof): allow 6 standard deviations.
      const double dof = static_cast<double>(n - 1);
      EXPECT_LT(chi2, dof + 6 * std::sqrt(2 * dof)) << "n=" << n;
    }
  }
}

// All 3! orderings of three elements occur about equally often.
TEST(IndexPermutationTest, AllPermutationsOfThreeAreEquallyLikely) {
  const int kSeeds = 60000;
  std::vector<int> counts(9, 0);  // keyed by perm(0) * 3 + perm(1)
  for (int s = 0; s < kSeeds; ++s) {
    const IndexPermutation perm(3, static_cast<uint64_t>(s));
    ++counts[perm(0) * 3 + perm(1)];
  }
  int nonzero = 0;
  for (int c : counts) {
    if (c == 0) continue;
    ++nonzero;
    EXPECT_NEAR(c, kSeeds / 6, kSeeds / 6 * 0.05);
  }
  EXPECT_EQ(nonzero, 6);
}

// Over many seeds, the pair (perm(0), perm(1)) is uniform over the n(n-1)
// ordered pairs of distinct values. Small domains (halves of one or two
// bits) are where a Feistel network with too few rounds shows its bias.
TEST(IndexPermutationTest, PairsOfImagesAreUniformForSmallSizes) {
  for (uint64_t n : {4, 5, 8, 16, 33}) {
    const uint64_t cells = n * (n - 1);
    const int per_cell = n <= 8 ? 2000 : 200;  // enough to see a bias of a few percent
    const int seeds = static_cast<int>(cells) * per_cell;
    std::vector<int> counts(n * n, 0);
    for (int s = 0; s < seeds; ++s) {
      const IndexPermutation perm(n, static_cast<uint64_t>(s) * 0x9e3779b97f4a7c15u);
      ++counts[perm(0) * n + perm(1)];
    }
    double chi2 = 0;
    for (uint64_t a = 0; a < n; ++a) {
      for (uint64_t b = 0; b < n; ++b) {
        if (a == b) {
          EXPECT_EQ(counts[a * n + b], 0);
          continue;
        }
        const double d = counts[a * n + b] - per_cell;
        chi2 += d * d / per_cell;
      }
    }
    const double dof = static_cast<double>(cells - 1);
    EXPECT_LT(chi2, dof + 6 * std::sqrt(2 * dof)) << "n=" << n;
  }
}

// For a uniform random permutation, E|perm(i) - i| = (n^2 - 1) / (3n) ~ n/3.
TEST(IndexPermutationTest, MeanDisplacementIsAboutAThird) {
  for (uint64_t n : {1000, 4097, 65536}) {
    for (uint64_t seed : {3, 4, 5}) {
      const IndexPermutation perm(n, seed);
      double total = 0;
      for (uint64_t i = 0; i < n; ++i) {
        total += std::fabs(static_cast<double>(perm(i)) - static_cast<double>(i));
      }
      const double mean = total / static_cast<double>(n);
      const double expected = (static_cast<double>(n) * n - 1) / (3.0 * n);
      EXPECT_NEAR(mean, expected, 0.05 * expected) << "n=" << n << " seed=" << seed;
    }
  }
}

// Neighbours do not stay neighbours: consecutive inputs map to outputs whose
// gaps look random (a weak Feistel would leave structure here).
TEST(IndexPermutationTest, ConsecutiveInputsAreSpreadOut) {
  const uint64_t n = 100'000;
  const IndexPermutation perm(n, 99);
  int close = 0;
  for (uint64_t i = 0; i + 1 < n; ++i) {
    const uint64_t a = perm(i), b = perm(i + 1);
    if ((a > b ? a - b : b - a) <= 10) ++close;
  }
  // A random permutation puts about 20 / n of pairs within distance 10: ~20.
  EXPECT_LT(close, 60);
}

TEST(IndexPermutationTest, HugeSizes) {
  for (uint64_t n :
       {(uint64_t{1} << 40) - 3, uint64_t{1} << 40, (uint64_t{1} << 40) + 1, ~uint64_t{0}}) {
    const IndexPermutation perm(n, 2024);
    std::set<uint64_t> seen;
    for (uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{2}, n / 2, n - 2, n - 1}) {
      const uint64_t p = perm(i);
      EXPECT_LT(p, n);
      seen.insert(p);
    }
    EXPECT_EQ(seen.size(), 6u) << "n=" << n;
    for (uint64_t i = 0; i < 1000; ++i) seen.insert(perm(1000 + i));
    EXPECT_EQ(seen.size(), 1006u) << "n=" << n;
  }
}

}  // namespace
}  // namespace sluice
