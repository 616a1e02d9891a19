#include "sluice/records/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {
namespace {

using ExtendFunction = uint32_t (*)(uint32_t, const void*, size_t);

// One bit at a time, straight from the definition: an oracle that shares no
// code or tables with the implementations under test.
uint32_t BitwiseCrc32c(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t r = ~crc;
  for (size_t i = 0; i < n; ++i) {
    r ^= p[i];
    for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ ((r & 1u) ? 0x82F63B78u : 0u);
  }
  return ~r;
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<uint8_t>(gen());
  return bytes;
}

struct Impl {
  const char* name;
  ExtendFunction extend;
  bool needs_hardware;
};

class Crc32cImplTest : public ::testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    if (GetParam().needs_hardware && !crc32c::HardwareAvailable()) {
      GTEST_SKIP() << "CPU lacks SSE4.2 / PCLMULQDQ";
    }
  }
  uint32_t Value(const void* data, size_t n) const { return GetParam().extend(0, data, n); }
  uint32_t Value(std::string_view s) const { return Value(s.data(), s.size()); }
  uint32_t Extend(uint32_t crc, const void* data, size_t n) const {
    return GetParam().extend(crc, data, n);
  }
};

INSTANTIATE_TEST_SUITE_P(All, Crc32cImplTest,
                         ::testing::Values(Impl{"Portable", crc32c::ExtendPortable, false},
                                           Impl{"Hardware", crc32c::ExtendHardware, true},
                                           Impl{"Dispatch", crc32c::Extend, false}),
                         [](const ::testing::TestParamInfo<Impl>& info) {
                           return std::string(info.param.name);
                         });

TEST_P(Crc32cImplTest, KnownVectors) {
  EXPECT_EQ(Value("123456789"), 0xE3069283u);
  EXPECT_EQ(Value(""), 0u);
  EXPECT_EQ(Value(nullptr, 0), 0u);

  uint8_t buf[32];
  std::memset(buf, 0, sizeof(buf));
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x8A9136AAu);
  std::memset(buf, 0xff, sizeof(buf));
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x113FDB5Cu);
}

TEST_P(Crc32cImplTest, EmptyExtendKeepsCrc) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_EQ(Extend(crc, "x", 0), crc);
  }
}

TEST_P(Crc32cImplTest, MatchesBitwiseReference) {
  const std::vector<uint8_t> data = RandomBytes(600, 1);
  for (size_t n = 0; n <= 512; ++n) {
    for (size_t offset : {0, 1, 5, 8}) {
      ASSERT_EQ(Value(data.data() + offset, n), BitwiseCrc32c(0, data.data() + offset, n))
          << "n=" << n << " offset=" << offset;
    }
    ASSERT_EQ(Extend(0xdeadbeefu, data.data(), n), BitwiseCrc32c(0xdeadbeefu, data.data(), n))
        << "n=" << n;
  }
}

TEST_P(Crc32cImplTest, ExtendComposes) {
  const std::vector<uint8_t> data = RandomBytes(40000, 2);
  const uint32_t whole = BitwiseCrc32c(0, data.data(), data.size());
  ASSERT_EQ(Value(data.data(), data.size()), whole);
  std::vector<size_t> splits;
  for (size_t s = 0; s <= 300; ++s) splits.push_back(s);
  for (size_t s = 301; s < data.size(); s += 997) splits.push_back(s);
  for (size_t s : {12287, 12288, 12289, 24576, 39999, 40000}) splits.push_back(s);
  for (size_t s : splits) {
    const uint32_t head = Value(data.data(), s);
    EXPECT_EQ(Extend(head, data.data() + s, data.size() - s), whole) << "split at " << s;
  }
  // Three pieces.
  for (size_t s1 : {1, 7, 100, 5000}) {
    for (size_t s2 : {s1, s1 + 3, s1 + 97, s1 + 12300}) {
      uint32_t crc = Value(data.data(), s1);
      crc = Extend(crc, data.data() + s1, s2 - s1);
      crc = Extend(crc, data.data() + s2, data.size() - s2);
      EXPECT_EQ(crc, whole) << s1 << " " << s2;
    }
  }
}

TEST(Crc32cTest, HardwareMatchesPortableAtEveryLengthAndAlignment) {
  if (!crc32c::HardwareAvailable()) GTEST_SKIP() << "CPU lacks SSE4.2 / PCLMULQDQ";
  const std::vector<uint8_t> data = RandomBytes(2048 + 16, 3);
  for (size_t offset = 0; offset < 16; ++offset) {
    const uint8_t* p = data.data() + offset;
    for (size_t n = 0; n <= 2048; ++n) {
      const uint32_t seed = static_cast<uint32_t>(n * 2654435761u);
      ASSERT_EQ(crc32c::ExtendHardware(0, p, n), crc32c::ExtendPortable(0, p, n))
          << "n=" << n << " offset=" << offset;
      ASSERT_EQ(crc32c::ExtendHardware(seed, p, n), crc32c::ExtendPortable(seed, p, n))
          << "n=" << n << " offset=" << offset;
    }
  }
}

TEST(Crc32cTest, HardwareMatchesPortableOnLargeBuffers) {
  if (!crc32c::HardwareAvailable()) GTEST_SKIP() << "CPU lacks SSE4.2 / PCLMULQDQ";
  constexpr size_t kMiB = size_t{1} << 20;
  const std::vector<uint8_t> data = RandomBytes(kMiB + 4096, 4);
  for (size_t n : {kMiB, kMiB + 1, kMiB + 7, kMiB + 13, kMiB + 333, kMiB + 4079}) {
    for (size_t offset = 0; offset < 16; ++offset) {
      const uint8_t* p = data.data() + offset;
      ASSERT_EQ(crc32c::ExtendHardware(0, p, n), crc32c::ExtendPortable(0, p, n))
          << "n=" << n << " offset=" << offset;
    }
  }
}

// Lengths around whole multiples of the sizes a three-stream implementation
// is likely to cut at (powers of two times 1 and 3), where off-by-ones hide.
TEST(Crc32cTest, HardwareMatchesPortableAroundBlockBoundaries) {
  if (!crc32c::HardwareAvailable()) GTEST_SKIP() << "CPU lacks SSE4.2 / PCLMULQDQ";
  const std::vector<uint8_t> data = RandomBytes(200000, 5);
  for (size_t base = 64; base <= 16384; base *= 2) {
    for (size_t multiple : {1, 2, 3, 4, 6, 9}) {
      for (int delta = -25; delta <= 25; ++delta) {
        const size_t n = base * multiple + delta;
        if (n + 3 > data.size()) continue;
        for (size_t offset : {0, 3}) {
          const uint8_t* p = data.data() + offset;
          ASSERT_EQ(crc32c::ExtendHardware(0x12345678u, p, n),
                    crc32c::ExtendPortable(0x12345678u, p, n))
              << "n=" << n << " offset=" << offset;
        }
      }
    }
  }
}

TEST(Crc32cTest, DispatchUsesHardwareWhenAvailable) {
  const std::vector<uint8_t> data = RandomBytes(5000, 6);
  EXPECT_EQ(crc32c::Extend(7, data.data(), data.size()),
            crc32c::ExtendPortable(7, data.data(), data.size()));
  EXPECT_EQ(crc32c::Value(std::string_view("123456789")), 0xE3069283u);
#if !defined(__x86_64__)
  EXPECT_FALSE(crc32c::HardwareAvailable());
#endif
}

TEST(Crc32cTest, MaskRoundTrips) {
  for (uint32_t crc : {0u, 1u, 0x80000000u, 0xffffffffu, 0xE3069283u, 0x12345678u}) {
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
  }
  std::mt19937 gen(7);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t crc = static_cast<uint32_t>(gen());
    ASSERT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
    ASSERT_EQ(crc32c::Mask(crc32c::Unmask(crc)), crc);
  }
  static_assert(crc32c::Unmask(crc32c::Mask(0xE3069283u)) == 0xE3069283u);
}

// The first record of a TensorBoard event file: its length field (24 as a
// little-endian uint64) and its payload, an Event with wall_time and
// file_version "brain.Event:2".
TEST(Crc32cTest, TensorBoardGoldenMaskedCrcs) {
  const std::string length("\x18\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(crc32c::Mask(crc32c::Value(length)), 0x224b7fa3u);
  const std::string event(
      "\x09\x00\x00\x80\x38\x99\xd6\xd7\x41\x1a\x0d"
      "brain.Event:2",
      24);
  EXPECT_EQ(crc32c::Mask(crc32c::Value(event)), 0xab364b12u);
  EXPECT_EQ(crc32c::Mask(crc32c::ExtendPortable(0, event.data(), event.size())), 0xab364b12u);
  EXPECT_EQ(crc32c::Unmask(0xab364b12u), crc32c::Value(event));
}

}  // namespace
}  // namespace sluice
