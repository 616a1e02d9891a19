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

}  // namespace
}  // namespace sluice
