#include "sluice/core/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace sluice {
namespace {

// Known answers from Random123's kat_vectors (philox4x32, 10 rounds).
TEST(RngTest, PhiloxKnownAnswers) {
  EXPECT_EQ(Rng::Philox({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Rng::Philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Rng::Philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RngTest, DeterministicPerSeedAndStream) {
  Rng a(7, 3), b(7, 3), c(7, 4), d(8, 3);
  std::vector<uint32_t> va, vb, vc, vd;
  for (int i = 0; i < 16; ++i) {
    va.push_back(a());
    vb.push_back(b());
    vc.push_back(c());
    vd.push_back(d());
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  EXPECT_NE(va, vd);
}

TEST(RngTest, ForkIsIndependentAndStable) {
  Rng a(1, 2);
  Rng f1 = a.Fork(0), f2 = a.Fork(0), g = a.Fork(1);
  EXPECT_EQ(f1.NextU64(), f2.NextU64());
  EXPECT_NE(Rng(1, 2).Fork(0).NextU64(), g.NextU64());
  EXPECT_EQ(a.NextU64(), Rng(1, 2).NextU64());  // forking did not advance a
}

TEST(RngTest, UniformRanges) {
  Rng r(42);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const float f = r.UniformFloat();
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    sum += f;
    const uint64_t k = r.UniformInt(10);
    ASSERT_LT(k, 10u);
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
  EXPECT_EQ(r.UniformInt(1), 0u);
}

TEST(RngTest, UniformIntIsUnbiased) {
  Rng r(9);
  std::vector<int> counts(7);
  const int n = 700000;
  for (int i = 0; i < n; ++i) ++counts[r.UniformInt(7)];
  for (int c : counts) EXPECT_NEAR(c, n / 7, 5 * std::sqrt(n / 7.0));
}

TEST(RngTest, NormalMoments) {
  Rng r(3);
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = r.Normal();
    ASSERT_TRUE(std::isfinite(x));
    s += x;
    s2 += x * x;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
}

TEST(RngTest, WorksWithStdShuffle) {
  std::vector<int> v(100);
  std::iota(v.begin(), v.end(), 0);
  std::vector<int> w = v;
  std::shuffle(v.begin(), v.end(), Rng(5));
  std::shuffle(w.begin(), w.end(), Rng(5));
  EXPECT_EQ(v, w);
  EXPECT_TRUE(std::is_permutation(v.begin(), v.end(), w.begin()));
}

}  // namespace
}  // namespace sluice
