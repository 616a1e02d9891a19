#include "sluice/nn/window.h"

#include <gtest/gtest.h>

#include "sluice/core/device.h"

namespace sluice::nn {
namespace {

TEST(WindowTest, SamePaddingMatchesTensorFlow) {
  // TF: out = ceil(in / stride); pad_total = max((out-1)*s + k - in, 0).
  Result<WindowDim> d = ComputeWindowDim(28, 3, 1, Padding::kSame);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->out, 28);
  EXPECT_EQ(d->pad_before, 1);
  EXPECT_EQ(d->pad_after, 1);
  d = ComputeWindowDim(7, 2, 2, Padding::kSame);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->out, 4);
  EXPECT_EQ(d->pad_before, 0);
  EXPECT_EQ(d->pad_after, 1);  // the larger half goes last
  d = ComputeWindowDim(5, 4, 1, Padding::kSame);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->pad_before, 1);
  EXPECT_EQ(d->pad_after, 2);
}

TEST(WindowTest, ValidPaddingUsesFullWindowsOnly) {
  Result<WindowDim> d = ComputeWindowDim(28, 5, 1, Padding::kValid);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->out, 24);
  d = ComputeWindowDim(7, 2, 2, Padding::kValid);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->out, 3);
  EXPECT_FALSE(ComputeWindowDim(2, 3, 1, Padding::kValid).ok());
  EXPECT_FALSE(ComputeWindowDim(5, 3, 0, Padding::kValid).ok());
}

TEST(WindowTest, OutputShapesCheckTheFilter) {
  Window2D w{.kernel_h = 3, .kernel_w = 3};
  Result<Shape> s = Conv2DOutputShape(Shape{8, 28, 28, 1}, Shape{3, 3, 1, 32}, w);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (Shape{8, 26, 26, 32}));
  Result<Shape> bad = Conv2DOutputShape(Shape{8, 28, 28, 3}, Shape{3, 3, 1, 32}, w);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[3,3,1,32]"), std::string::npos) << bad.status().message();
  Window2D pool{.kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  s = Pool2DOutputShape(Shape{8, 26, 26, 32}, pool);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (Shape{8, 13, 13, 32}));
}

}  // namespace
}  // namespace sluice::nn
