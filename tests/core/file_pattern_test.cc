// ExpandBraces against Python's braceexpand (the expected lists below are
// what braceexpand 0.1.7, which webdataset uses, gives for each pattern).
#include "sluice/core/file_pattern.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice {
namespace {

using Names = std::vector<std::string>;

Names Expand(std::string_view p) {
  Result<Names> r = ExpandBraces(p);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Names{};
}

TEST(ExpandBraces, AsBraceexpand) {
  EXPECT_EQ(Expand("shard-{000000..000003}.tar"),
            (Names{"shard-000000.tar", "shard-000001.tar", "shard-000002.tar",
                   "shard-000003.tar"}));
  EXPECT_EQ(Expand("{train,val}/p-{0..9..3}"),
            (Names{"train/p-0", "train/p-3", "train/p-6", "train/p-9", "val/p-0", "val/p-3",
                   "val/p-6", "val/p-9"}));
  EXPECT_EQ(Expand("a{1,{2,3}}b"), (Names{"a1b", "a2b", "a3b"}));
  EXPECT_EQ(Expand("x{07..10}"), (Names{"x07", "x08", "x09", "x10"}));
  EXPECT_EQ(Expand("{-2..1}"), (Names{"-2", "-1", "0", "1"}));
  EXPECT_EQ(Expand("{-01..1}"), (Names{"-01", "000", "001"}));
  EXPECT_EQ(Expand("{4..1..2}"), (Names{"4", "2"}));
  EXPECT_EQ(Expand("lit{x}"), (Names{"lit{x}"}));
  EXPECT_EQ(Expand("{a,}z"), (Names{"az", "z"}));
  EXPECT_EQ(Expand("{1..3}{a,b}"), (Names{"1a", "1b", "2a", "2b", "3a", "3b"}));
  EXPECT_EQ(Expand("no/braces-*.tar"), (Names{"no/braces-*.tar"}));
  // Escaped braces stay (with their backslashes, which glob(3) then reads).
  EXPECT_EQ(Expand("esc\\{a,b\\}"), (Names{"esc\\{a,b\\}"}));
}

TEST(ExpandBraces, RefusesUnbalancedAndHugePatterns) {
  EXPECT_EQ(ExpandBraces("a{1,2").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandBraces("a}b").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandBraces("esc\\{a,b}").status().code(), StatusCode::kInvalidArgument);
  // 10^18 names: refused before any is made.
  Result<Names> huge = ExpandBraces("{0..999999999999999999}");
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("limit"), std::string::npos);
  // A product of lists over the limit.
  EXPECT_FALSE(ExpandBraces("{0..999}{0..999}{0..9}", 1'000'000).ok());
  EXPECT_TRUE(ExpandBraces("{0..999}{0..999}", 1'000'000).ok());
}

}  // namespace
}  // namespace sluice
