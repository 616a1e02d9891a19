#include "sluice/core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sluice/core/float16.h"

namespace sluice {
namespace {

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeSize(DType::kUInt8), 1u);
  EXPECT_EQ(DTypeSize(DType::kInt32), 4u);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8u);
  EXPECT_EQ(DTypeSize(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kFloat32), 4u);
  EXPECT_EQ(DTypeSize(DType::kFloat64), 8u);
  EXPECT_EQ(DTypeSize(DType::kString), sizeof(std::string_view));
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    EXPECT_EQ(IsFloatDType(d), DTypeName(d).starts_with("float") || d == DType::kBFloat16)
        << DTypeName(d);
    Result<DType> back = DTypeFromName(DTypeName(d));
    ASSERT_TRUE(back.ok()) << DTypeName(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(*DTypeFromName("float"), DType::kFloat32);
  EXPECT_EQ(*DTypeFromName("half"), DType::kFloat16);
  EXPECT_EQ(DTypeFromName("complex64").status().code(), StatusCode::kInvalidArgument);
}

TEST(Float16Test, ExactValuesRoundTrip) {
  const std::pair<float, uint16_t> cases[] = {
      {0.0f, 0x0000},     {-0.0f, 0x8000},    {1.0f, 0x3c00},
      {-2.0f, 0xc000},    {65504.0f, 0x7bff}, {0x1p-14f, 0x0400},
      {0x1p-24f, 0x0001}, {0.5f, 0x3800},     {std::numeric_limits<float>::infinity(), 0x7c00},
  };
  for (const auto& [f, bits] : cases) {
    EXPECT_EQ(float16(f).bits, bits) << f;
    EXPECT_EQ(static_cast<float>(float16::FromBits(bits)), f) << bits;
  }
}

TEST(Float16Test, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1.
  EXPECT_EQ(float16(1.0f + 0x1p-11f).bits, 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9: -> 1+2^-9.
  EXPECT_EQ(float16(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);  // overflow rounds to inf
  EXPECT_EQ(float16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(float16(0x1p-25f).bits, 0x0000);    // tie to even (zero)
  EXPECT_EQ(float16(0x1.8p-24f).bits, 0x0002);  // 1.5 ulp -> 2 ulp
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::nanf("")))));
}

TEST(Float16Test, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float16 h = float16::FromBits(static_cast<uint16_t>(b));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float16(f).bits, b);
  }
}

TEST(BFloat16Test, ConversionsRoundToNearestEven) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(bfloat16::FromBits(0x3f80)), 1.0f);
  EXPECT_EQ(bfloat16(std::bit_cast<float>(0x3f808000u)).bits, 0x3f80);  // tie -> even
  EXPECT_EQ(bfloat16(std::bit_cast<float>(0x3f818000u)).bits, 0x3f82);  // tie -> even
  EXPECT_EQ(bfloat16(std::bit_cast<float>(0x3f808001u)).bits, 0x3f81);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::nanf("")))));
}

}  // namespace
}  // namespace sluice
