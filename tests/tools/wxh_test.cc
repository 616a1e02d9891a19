// tools/wxh.h: the "WxH" sizes of `convert images --resize` and `bench`.
#include "wxh.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::tools {
namespace {

TEST(ParseWxHTest, AcceptsWholeSidesInRange) {
  int64_t w = 0, h = 0;
  ASSERT_TRUE(ParseWxH("16x9", &w, &h));
  EXPECT_EQ(w, 16);
  EXPECT_EQ(h, 9);
  ASSERT_TRUE(ParseWxH("1x65500", &w, &h));
  EXPECT_EQ(w, 1);
  EXPECT_EQ(h, kMaxWxHSide);
}

TEST(ParseWxHTest, RejectsMalformedAndLeavesTheOutputsAlone) {
  for (const std::string s :
       {"", "x", "16", "4x", "x4", "0x4", "4x0", "-4x4", "+4x4", " 4x4", "4x4 ", "4x4x4", "16X16",
        "4.5x4", "65501x4", "4x65501", "99999999999999999999x4", "4x99999999999999999999"}) {
    int64_t w = 7, h = 8;
    EXPECT_FALSE(ParseWxH(s, &w, &h)) << '"' << s << '"';
    EXPECT_EQ(w, 7) << s;
    EXPECT_EQ(h, 8) << s;
  }
}

}  // namespace
}  // namespace sluice::tools
