// Shared helpers for sluice's GoogleTest suites: status matchers, the golden
// data folder and per-test scratch directories.
#ifndef SLUICE_TESTS_TEST_UTIL_H_
#define SLUICE_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/status.h"

namespace sluice::testing {

// tests/data (from $SLUICE_TEST_DATA, set by CTest), joined with `relative`.
std::string TestDataPath(std::string_view relative = "");

// A fresh empty directory for the running test, removed when the test ends.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// Whole-file helpers; fail the test on error.
std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, std::string_view contents);

inline const Status& ToStatus(const Status& s) { return s; }
template <typename T>
const Status& ToStatus(const Result<T>& r) {
  return r.status();
}

}  // namespace sluice::testing

// The status is copied out: `expr` may be a temporary Result.
#define SLUICE_EXPECT_OK(expr)                                                  \
  do {                                                                          \
    const ::sluice::Status sluice_test_st_ = ::sluice::testing::ToStatus(expr); \
    EXPECT_TRUE(sluice_test_st_.ok()) << sluice_test_st_;                       \
  } while (0)
#define SLUICE_ASSERT_OK(expr)                                                  \
  do {                                                                          \
    const ::sluice::Status sluice_test_st_ = ::sluice::testing::ToStatus(expr); \
    ASSERT_TRUE(sluice_test_st_.ok()) << sluice_test_st_;                       \
  } while (0)
#define SLUICE_ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  SLUICE_ASSERT_OK_AND_ASSIGN_IMPL_(SLUICE_CONCAT_(sluice_test_r_, __LINE__), lhs, rexpr)
#define SLUICE_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                      \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                   \
  lhs = std::move(tmp).value()

// Expects `expr` to fail with `code` and a message containing `substr`.
#define SLUICE_EXPECT_ERROR(expr, code_, substr)                                             \
  do {                                                                                       \
    const ::sluice::Status sluice_test_e_ = ::sluice::testing::ToStatus(expr);               \
    EXPECT_EQ(sluice_test_e_.code(), (code_)) << sluice_test_e_;                             \
    EXPECT_NE(std::string(sluice_test_e_.message()).find(substr), std::string::npos)         \
        << "message: " << sluice_test_e_.message() << "\nexpected to contain: " << (substr); \
  } while (0)

#endif  // SLUICE_TESTS_TEST_UTIL_H_
