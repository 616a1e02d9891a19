#include "sluice/ops/read_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace sluice::ops {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "." + std::to_string(::testing::UnitTest::GetInstance()->random_seed())))
      .string();
}

TEST(ReadFile, ReadsAllBytes) {
  const std::string path = TempPath("read_file_all");
  std::string bytes(100'000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary) << bytes;
  Result<Tensor> t = ReadFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->shape().rank(), 0);
  EXPECT_EQ(t->scalar<std::string_view>(), bytes);
  std::remove(path.c_str());
}

TEST(ReadFile, EmptyFile) {
  const std::string path = TempPath("read_file_empty");
  std::ofstream(path, std::ios::binary).close();
  Result<Tensor> t = ReadFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->scalar<std::string_view>(), "");
  std::remove(path.c_str());
}

TEST(ReadFile, MissingFileIsNotFoundNamingThePath) {
  Result<Tensor> t = ReadFile("/nonexistent/dir/x.jpg");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("/nonexistent/dir/x.jpg"), std::string::npos);
}

TEST(ReadFile, DirectoryIsInvalidArgument) {
  Result<Tensor> t = ReadFile(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(ReadFile, LargerThanLimitIsResourceExhausted) {
  const std::string path = TempPath("read_file_limit");
  std::ofstream(path, std::ios::binary) << std::string(1000, 'x');
  Result<Tensor> t = ReadFile(path, 999);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(t.status().message().find(path), std::string::npos);
  EXPECT_TRUE(ReadFile(path, 1000).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sluice::ops
