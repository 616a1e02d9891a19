#include "sluice/core/element.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice {
namespace {

TEST(ElementTest, IndexAndName) {
  Element e({Tensor::Scalar<int64_t>(3), Tensor::StringScalar("cat")}, {"label", "name"});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].scalar<int64_t>(), 3);
  ASSERT_NE(e.find("name"), nullptr);
  EXPECT_EQ(e.find("name")->scalar<std::string_view>(), "cat");
  EXPECT_EQ(e.find("missing"), nullptr);
  EXPECT_EQ(e.index_of("label"), 0);
  SLUICE_EXPECT_ERROR(e.get("image"), StatusCode::kNotFound, "it has: label, name");
  EXPECT_EQ(e.DebugString(), "(label: int64[] {3}, name: string[] {\"cat\"})");
}

TEST(ElementTest, UnnamedAndPushBack) {
  Element e({Tensor::Scalar<float>(1.5f)});
  EXPECT_EQ(e.names()[0], "");
  e.push_back(Tensor::Scalar<int32_t>(2), "x");
  EXPECT_EQ(e.size(), 2u);
  EXPECT_EQ(e.get("x")->scalar<int32_t>(), 2);
  Element copy = e;
  copy[0].flat<float>()[0] = 9.0f;  // handles share bytes
  EXPECT_EQ(e[0].scalar<float>(), 9.0f);
}

TEST(ElementTest, SharedNamesAreCopiedOnlyOnWrite) {
  auto names = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"a", "b"});
  Element e({Tensor::Scalar<int32_t>(1), Tensor::Scalar<int32_t>(2)}, names);
  Element f = e;
  EXPECT_EQ(&e.names(), &f.names());
  EXPECT_EQ(&e.names(), names.get());
  f.push_back(Tensor::Scalar<int32_t>(3), "c");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(f.get("c")->scalar<int32_t>(), 3);
  Element empty;
  EXPECT_TRUE(empty.names().empty());
  empty.push_back(Tensor::Scalar<int32_t>(0));
  EXPECT_EQ(empty.names(), std::vector<std::string>{""});
}

TEST(ShapeMoveTest, MovesKeepDims) {
  Shape big{1, 2, 3, 4, 5, 6, 7, 8};
  Shape moved = std::move(big);
  EXPECT_EQ(moved.num_elements(), 40320);
  Shape small{2, 3};
  Shape m2 = std::move(small);
  EXPECT_EQ(m2, (Shape{2, 3}));
  m2 = std::move(moved);
  EXPECT_EQ(m2.rank(), 8);
  moved = Shape{4};  // a moved-from shape is reusable
  EXPECT_EQ(moved, Shape{4});
}

}  // namespace
}  // namespace sluice
