#include "sluice/core/status.h"

#include <gtest/gtest.h>

#include "sluice/core/result.h"
#include "test_util.h"

namespace sluice {
namespace {

TEST(StatusTest, OkIsDefaultAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s, Status::OK());
}

TEST(StatusTest, FactoriesSetCodeAndMessage) {
  const std::pair<Status, StatusCode> cases[] = {
      {Status::Cancelled("m"), StatusCode::kCancelled},
      {Status::InvalidArgument("m"), StatusCode::kInvalidArgument},
      {Status::NotFound("m"), StatusCode::kNotFound},
      {Status::ResourceExhausted("m"), StatusCode::kResourceExhausted},
      {Status::FailedPrecondition("m"), StatusCode::kFailedPrecondition},
      {Status::OutOfRange("m"), StatusCode::kOutOfRange},
      {Status::Internal("m"), StatusCode::kInternal},
      {Status::Unavailable("m"), StatusCode::kUnavailable},
      {Status::DataLoss("m"), StatusCode::kDataLoss},
  };
  for (const auto& [status, code] : cases) {
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.code(), code);
    EXPECT_EQ(status.message(), "m");
    EXPECT_EQ(status.ToString(), std::string(StatusCodeName(code)) + ": m");
  }
}

TEST(StatusTest, CanonicalNumericCodes) {
  EXPECT_EQ(static_cast<int>(StatusCode::kInvalidArgument), 3);
  EXPECT_EQ(static_cast<int>(StatusCode::kDataLoss), 15);
  EXPECT_EQ(static_cast<int>(StatusCode::kOutOfRange), 11);
}

TEST(StatusTest, WithContextPrefixesMessage) {
  Status s = Status::DataLoss("corrupt record").WithContext("reading a.tfrecord");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "reading a.tfrecord: corrupt record");
  EXPECT_TRUE(Status::OK().WithContext("x").ok());
}

TEST(StatusTest, OkCodeWithMessageBecomesInternal) {
  Status s(StatusCode::kOk, "oops");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Status UseMacros(int x, int* out) {
  SLUICE_ASSIGN_OR_RETURN(int h, Half(x));
  SLUICE_RETURN_IF_ERROR(Half(h));
  *out = h;
  return Status::OK();
}

TEST(ResultTest, ValueAndError) {
  Result<int> a = Half(4);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 2);
  EXPECT_TRUE(a.status().ok());
  Result<int> b = Half(3);
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.value_or(-1), -1);
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<int> r = Status::OK();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultTest, MacrosPropagate) {
  int out = 0;
  SLUICE_EXPECT_OK(UseMacros(8, &out));
  EXPECT_EQ(out, 4);
  EXPECT_EQ(UseMacros(3, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(UseMacros(6, &out).code(), StatusCode::kInvalidArgument);  // 6/2 = 3 is odd
}

TEST(ResultDeathTest, ValueOnErrorAborts) {
  Result<int> r = Status::NotFound("no such thing");
  EXPECT_DEATH((void)r.value(), "no such thing");
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

}  // namespace
}  // namespace sluice
