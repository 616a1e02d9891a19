#include "sluice/core/shape.h"

#include <gtest/gtest.h>

#include <limits>

namespace sluice {
namespace {

TEST(ShapeTest, ScalarAndDims) {
  Shape scalar;
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_EQ(scalar.ToString(), "[]");
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.dim(1), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.ToString(), "[2,3,4]");
  EXPECT_TRUE(s.IsFullyDefined());
}

TEST(ShapeTest, UnknownDimsAndRank) {
  Shape s{Shape::kUnknownDim, 3};
  EXPECT_FALSE(s.IsFullyDefined());
  EXPECT_EQ(s.ToString(), "[?,3]");
  EXPECT_FALSE(s.CheckedNumElements().has_value());
  EXPECT_TRUE(s.IsCompatibleWith(Shape{5, 3}));
  EXPECT_FALSE(s.IsCompatibleWith(Shape{5, 4}));
  EXPECT_FALSE(s.IsCompatibleWith(Shape{5}));
  EXPECT_TRUE(Shape::UnknownRank().IsCompatibleWith(Shape{1, 2, 3}));
  EXPECT_EQ(Shape::UnknownRank().ToString(), "<unknown>");
}

TEST(ShapeTest, OverflowIsDetected) {
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE((Shape{big, 3}).CheckedNumElements().has_value());
  EXPECT_EQ(*(Shape{1 << 20, 1 << 20}).CheckedNumElements(), int64_t{1} << 40);
}

TEST(ShapeTest, HighRankSpillsToHeapAndCopies) {
  Shape s{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(s.rank(), 8);
  EXPECT_EQ(s.num_elements(), 40320);
  Shape copy = s;
  EXPECT_EQ(copy, s);
  copy.set_dim(7, 9);
  EXPECT_NE(copy, s);
  Shape grown{1, 2, 3, 4, 5, 6};
  grown.AppendDim(7);
  EXPECT_EQ(grown, (Shape{1, 2, 3, 4, 5, 6, 7}));
  Shape small{1};
  small = s;
  EXPECT_EQ(small, s);
  s = Shape{3};
  EXPECT_EQ(s.rank(), 1);
  EXPECT_EQ(s.dim(0), 3);
}

TEST(ShapeTest, PrependAndSubshape) {
  Shape s{3, 4};
  EXPECT_EQ(s.Prepend(2), (Shape{2, 3, 4}));
  EXPECT_EQ(s.Subshape(1), (Shape{4}));
  EXPECT_EQ(s.Subshape(0, 1), (Shape{3}));
  EXPECT_EQ(s.Subshape(2), Shape{});
}

}  // namespace
}  // namespace sluice
