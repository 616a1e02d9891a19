#include "sluice/pipeline/internal/packed_element.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace sluice::pipeline_internal {
namespace {

Element Sample() {
  auto names = std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"image", "label", "text", "empty", "scalar"});
  Tensor image = Tensor::Allocate(DType::kFloat32, Shape{3, 5, 2}).value();
  for (int i = 0; i < 30; ++i) image.flat<float>()[i] = 0.5f * static_cast<float>(i);
  Element e({image, Tensor::Scalar<int64_t>(7),
             Tensor::FromStrings({"cat", "", "a longer string with bytes"}).value(),
             Tensor::Zeros(DType::kInt32, Shape{0, 4}).value(), Tensor::Scalar<double>(-1.25)},
            names);
  e.set_origin(std::make_shared<const std::string>("train-0.tfrecord"), 41);
  return e;
}

TEST(PackedElement, UnpackGivesTheSameElement) {
  ElementPacker packer;
  const Element e = Sample();
  PackedElement p = packer.Pack(e);
  const Element peek = p.Peek();
  const Element out = std::move(p).Unpack();
  for (const Element* x : {&peek, &out}) {
    ASSERT_EQ(x->size(), e.size());
    for (size_t i = 0; i < e.size(); ++i) EXPECT_TRUE(Identical((*x)[i], e[i])) << i;
    EXPECT_EQ(x->names(), e.names());
    EXPECT_EQ(x->OriginString(), "train-0.tfrecord record 41");
  }
}

TEST(PackedElement, UnpackedTensorsOutliveThePackedElement) {
  ElementPacker packer;
  Element out;
  {
    PackedElement p = packer.Pack(Sample());
    PackedElement moved = std::move(p);
    out = std::move(moved).Unpack();
  }
  EXPECT_EQ(out[2].flat<std::string_view>()[2], "a longer string with bytes");
  EXPECT_EQ(out[0].flat<float>()[29], 14.5f);
}

TEST(PackedElement, LargeElementsAreKeptAsTheyAre) {
  ElementPacker packer;
  Tensor big = Tensor::Zeros(DType::kUInt8, Shape{ElementPacker::kMaxPackedBytes + 1}).value();
  const void* data = big.raw_data();
  Element out = packer.Pack(Element({big})).Unpack();
  EXPECT_EQ(out[0].raw_data(), data);  // not copied
}

TEST(PackedElement, UnnamedElementsStayUnnamed) {
  ElementPacker packer;
  Element out = packer.Pack(Element({Tensor::Scalar<int32_t>(3)})).Unpack();
  EXPECT_EQ(out.names(), std::vector<std::string>{""});
  EXPECT_EQ(out[0].scalar<int32_t>(), 3);
  EXPECT_EQ(out.OriginString(), "");
}

TEST(PackedElement, EmptyElementRoundTrips) {
  ElementPacker packer;
  Element out = packer.Pack(Element()).Unpack();
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace sluice::pipeline_internal
