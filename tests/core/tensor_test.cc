#include "sluice/core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace sluice {
namespace {

TEST(TensorTest, DefaultIsEmptyFloat) {
  Tensor t;
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_EQ(t.shape(), Shape{0});
  EXPECT_EQ(t.num_elements(), 0);
}

TEST(TensorTest, AllocateAndWrite) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Zeros(DType::kInt64, Shape{2, 3}));
  EXPECT_EQ(t.num_elements(), 6);
  EXPECT_EQ(t.byte_size(), 48u);
  auto v = t.flat<int64_t>();
  for (int64_t x : v) EXPECT_EQ(x, 0);
  for (int i = 0; i < 6; ++i) v[i] = i;
  EXPECT_EQ(t.DebugString(), "int64[2,3] {0, 1, 2, 3, 4, 5}");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
}

TEST(TensorTest, AllocateRejectsBadShapes) {
  SLUICE_EXPECT_ERROR(Tensor::Allocate(DType::kFloat32, Shape{-1, 2}), StatusCode::kInvalidArgument,
                      "[?,2]");
  SLUICE_EXPECT_ERROR(Tensor::Allocate(DType::kFloat64, Shape{int64_t{1} << 40, int64_t{1} << 30}),
                      StatusCode::kInvalidArgument, "fully defined");
  SLUICE_EXPECT_ERROR(Tensor::Allocate(DType::kFloat64, Shape{int64_t{1} << 40, 1 << 10}),
                      StatusCode::kResourceExhausted, "float64[1099511627776,1024]");
}

TEST(TensorTest, SliceAndRowShareBytes) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t,
                              Tensor::FromVector<float>(std::vector<float>{0, 1, 2, 3, 4, 5}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor m, t.Reshape(Shape{3, 2}));
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor s, m.Slice(1, 3));
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.flat<float>()[0], 2.0f);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor r, m.Row(2));
  EXPECT_EQ(r.shape(), Shape{2});
  EXPECT_EQ(r.flat<float>()[1], 5.0f);
  r.flat<float>()[1] = 50.0f;
  EXPECT_EQ(t.flat<float>()[5], 50.0f);  // shared
  SLUICE_EXPECT_ERROR(m.Slice(2, 4), StatusCode::kOutOfRange, "[2, 4)");
  SLUICE_EXPECT_ERROR(m.Slice(-1, 1), StatusCode::kOutOfRange, "shape [3,2]");
  SLUICE_EXPECT_ERROR(Tensor::Scalar<int32_t>(1).Slice(0, 1), StatusCode::kInvalidArgument,
                      "scalar");
  SLUICE_EXPECT_ERROR(t.Reshape(Shape{4, 2}), StatusCode::kInvalidArgument, "[4,2]");
}

TEST(TensorTest, CloneIsIndependent) {
  Tensor a = Tensor::Scalar<int32_t>(5);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor b, a.Clone());
  b.flat<int32_t>()[0] = 6;
  EXPECT_EQ(a.scalar<int32_t>(), 5);
  EXPECT_EQ(b.scalar<int32_t>(), 6);
}

TEST(TensorTest, StringsCopiedAndViewed) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor s, Tensor::FromStrings({"ab", "", "cde"}));
  EXPECT_EQ(s.dtype(), DType::kString);
  EXPECT_EQ(s.flat<std::string_view>()[2], "cde");
  EXPECT_EQ(s.string_owners().size(), 1u);
  EXPECT_EQ(s.DebugString(), "string[3] {\"ab\", \"\", \"cde\"}");
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor row, s.Row(2));
  EXPECT_EQ(row.scalar<std::string_view>(), "cde");
  // Zero copy: views into a shared record buffer.
  Buffer record = *Buffer::Allocate(5);
  std::memcpy(record.data(), "hello", 5);
  Buffer views = *Buffer::Allocate(2 * sizeof(std::string_view));
  auto* v = reinterpret_cast<std::string_view*>(views.data());
  v[0] = std::string_view(reinterpret_cast<char*>(record.data()), 2);
  v[1] = std::string_view(reinterpret_cast<char*>(record.data()) + 2, 3);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor z, Tensor::FromStringViews(Shape{2}, views, {record}));
  record = Buffer();  // the tensor keeps the bytes alive
  EXPECT_EQ(z.flat<std::string_view>()[0], "he");
  EXPECT_EQ(z.flat<std::string_view>()[1], "llo");
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor deep, z.Clone());
  EXPECT_TRUE(Identical(deep, z));
  EXPECT_NE(deep.flat<std::string_view>()[0].data(), z.flat<std::string_view>()[0].data());
}

TEST(TensorTest, AddStringOwnerDedupsAndCopiesOnWrite) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor s, Tensor::Allocate(DType::kString, Shape{2}));
  Buffer a = *Buffer::Allocate(1), b = *Buffer::Allocate(1);
  s.AddStringOwner(a);
  s.AddStringOwner(a);
  EXPECT_EQ(s.string_owners().size(), 1u);
  Tensor copy = s;
  s.AddStringOwner(b);
  EXPECT_EQ(s.string_owners().size(), 2u);
  EXPECT_EQ(copy.string_owners().size(), 1u);
}

TEST(TensorTest, FromBufferChecksBounds) {
  Buffer b = *Buffer::AllocateZeroed(16);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::FromBuffer(DType::kInt32, Shape{2}, b, 8));
  EXPECT_EQ(t.num_elements(), 2);
  SLUICE_EXPECT_ERROR(Tensor::FromBuffer(DType::kInt32, Shape{3}, b, 8),
                      StatusCode::kInvalidArgument, "needs 12 bytes at offset 8");
  SLUICE_EXPECT_ERROR(Tensor::FromBuffer(DType::kString, Shape{1}, b), StatusCode::kInvalidArgument,
                      "string");
}

TEST(TensorTest, IdenticalComparesBitsAndContent) {
  const float nan = std::nanf("");
  Tensor a = *Tensor::FromVector<float>(std::vector<float>{nan, 0.0f});
  Tensor b = *a.Clone();
  EXPECT_TRUE(Identical(a, b));
  b.flat<float>()[1] = -0.0f;
  EXPECT_FALSE(Identical(a, b));
  EXPECT_FALSE(Identical(Tensor::Scalar<int32_t>(1), Tensor::Scalar<int64_t>(1)));
  EXPECT_TRUE(Identical(Tensor::StringScalar("x"), Tensor::StringScalar("x")));
}

TEST(TensorDeathTest, WrongTypeAccessAborts) {
  Tensor t = Tensor::Scalar<int64_t>(1);
  EXPECT_DEATH((void)t.flat<float>(), "int64 accessed as float32");
}

TEST(TensorTest, FromVectorTakesBools) {
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::FromVector(std::vector<bool>{true, false, true}));
  EXPECT_EQ(t.dtype(), DType::kBool);
  EXPECT_EQ(t.shape(), Shape({3}));
  EXPECT_TRUE(t.flat<bool>()[0]);
  EXPECT_FALSE(t.flat<bool>()[1]);
  SLUICE_ASSERT_OK_AND_ASSIGN(Tensor empty, Tensor::FromVector(std::vector<bool>{}));
  EXPECT_EQ(empty.num_elements(), 0);
}

}  // namespace
}  // namespace sluice
