// core/filesystem.h: URI schemes and path arithmetic, the local file
// system, and the dispatch of core/file.h's functions to a registered one.
#include "sluice/core/filesystem.h"
#include "sluice/core/remote_cache.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::WriteFileOrDie;

TEST(UriTest, SchemesArePlainPathsFileAndObjectStores) {
  EXPECT_EQ(UriScheme("/data/x"), "file");
  EXPECT_EQ(UriScheme("data/x:y"), "file");
  EXPECT_EQ(UriScheme("file:///data/x"), "file");
  EXPECT_EQ(UriScheme("s3://b/k"), "s3");
  EXPECT_EQ(UriScheme("S3://b/k"), "s3");
  EXPECT_EQ(UriScheme("gs://b/k"), "gs");
  EXPECT_EQ(UriScheme("abfss://c@a.dfs.core.windows.net/x"), "abfss");
  EXPECT_EQ(UriScheme("weird/dir://x"), "file");  // a '/' before "://": a path
  EXPECT_FALSE(IsRemotePath("/data/x"));
  EXPECT_FALSE(IsRemotePath("file:///data/x"));
  EXPECT_TRUE(IsRemotePath("s3://b/k"));
}

TEST(UriTest, PathArithmeticKeepsTheSchemeAndBucket) {
  EXPECT_EQ(JoinPath("s3://b/dir", "x"), "s3://b/dir/x");
  EXPECT_EQ(JoinPath("s3://b/dir/", "/x"), "s3://b/dir/x");
  EXPECT_EQ(JoinPath("", "x"), "x");
  EXPECT_EQ(JoinPath("/a", "b"), "/a/b");
  EXPECT_EQ(ParentPath("s3://b/d/x"), "s3://b/d");
  EXPECT_EQ(ParentPath("s3://b/x"), "s3://b");
  EXPECT_EQ(ParentPath("s3://b"), "s3://b");
  EXPECT_EQ(ParentPath("/a/b"), "/a");
  EXPECT_EQ(ParentPath("/a"), "/");
  EXPECT_EQ(ParentPath("a/b/"), "a");
  EXPECT_EQ(ParentPath("x"), "");
  EXPECT_EQ(ParentPath("file:///a/b"), "file:///a");
  EXPECT_EQ(BaseName("s3://b/d/x"), "x");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(BaseName("x"), "x");
}

TEST(LocalFileSystemTest, StatListDeleteAndCreateDirs) {
  ScratchDir dir;
  ASSERT_TRUE(CreateDirs(dir.file("a/b/c")).ok());
  WriteFileOrDie(dir.file("a/one"), "12345");
  WriteFileOrDie(dir.file("a/b/c/two"), "xy");
  auto info = StatPath(dir.file("a/one"));
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->size, 5u);
  EXPECT_FALSE((*info)->is_dir);
  EXPECT_TRUE((*StatPath(dir.file("a/b")))->is_dir);
  EXPECT_FALSE(StatPath(dir.file("a/missing"))->has_value());
  EXPECT_FALSE(*PathExists(dir.file("a/one/under-a-file")));
  EXPECT_TRUE(*PathExists("file://" + dir.file("a/one")));

  auto flat = ListFolder(dir.file("a"));
  ASSERT_TRUE(flat.ok()) << flat.status();
  ASSERT_EQ(flat->size(), 2u);
  EXPECT_EQ((*flat)[0].path, dir.file("a/b"));
  EXPECT_TRUE((*flat)[0].is_dir);
  EXPECT_EQ((*flat)[1].path, dir.file("a/one"));
  auto deep = ListFolder(dir.file("a"), /*recursive=*/true);
  ASSERT_TRUE(deep.ok());
  ASSERT_EQ(deep->size(), 2u);  // files only
  EXPECT_EQ((*deep)[0].path, dir.file("a/b/c/two"));
  EXPECT_EQ((*deep)[0].size, 2u);
  EXPECT_TRUE(ListFolder(dir.file("nothing-here"))->empty());

  ASSERT_TRUE(DeletePath(dir.file("a/one")).ok());
  EXPECT_FALSE(*PathExists(dir.file("a/one")));
  EXPECT_TRUE(DeletePath(dir.file("a/one")).ok());  // already gone
}

TEST(LocalFileSystemTest, WritableFilePublishesOnCloseOnly) {
  ScratchDir dir;
  auto fs = FileSystemFor(dir.file("out"));
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ((*fs)->scheme(), "file");
  EXPECT_FALSE((*fs)->is_remote());
  auto w = (*fs)->OpenWritable(dir.file("out"));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Append("abc").ok());
  EXPECT_FALSE(*PathExists(dir.file("out")));
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadFileOrDie(dir.file("out")), "abc");
  auto aborted = (*fs)->OpenWritable(dir.file("out"));
  ASSERT_TRUE((*aborted)->Append("zzz").ok());
  (*aborted)->Abort();
  EXPECT_EQ(ReadFileOrDie(dir.file("out")), "abc");
  EXPECT_EQ(ListFolder(dir.path())->size(), 1u);  // no temporary left behind
}

TEST(FileSystemForTest, UnknownSchemesAndMissingObjectStoresAreClearErrors) {
  auto unknown = FileSystemFor("ftp://host/x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("ftp://host/x"), std::string::npos);
  if (!RemoteFileSystemsAvailable()) {
    auto s3 = OpenReadableFile("s3://bucket/key");
    ASSERT_FALSE(s3.ok());
    EXPECT_EQ(s3.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(s3.status().message().find("s3://bucket/key"), std::string::npos);
    EXPECT_NE(s3.status().message().find("Arrow"), std::string::npos);
  }
}

// A store held in memory: enough to check that core/file.h's functions
// reach whatever file system a scheme resolves to.
class MemoryStore final : public FileSystem {
 public:
  std::string_view scheme() const override { return "memtest"; }
  bool is_remote() const override { return true; }
  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) return Status::NotFound(path + ": no such object");
    return NewMemoryFile(path, it->second);
  }
  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path) override {
    return std::unique_ptr<WritableFile>(new Upload(this, path));
  }
  Result<std::optional<FileInfo>> Stat(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) return std::optional<FileInfo>();
    return std::optional<FileInfo>(FileInfo{path, false, it->second.size()});
  }
  Status List(const std::string& dir, bool,
              const std::function<Status(const FileInfo&)>& visit) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : objects_) {
      if (k.starts_with(dir + "/")) SLUICE_RETURN_IF_ERROR(visit(FileInfo{k, false, v.size()}));
    }
    return Status::OK();
  }
  Status Delete(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    objects_.erase(path);
    return Status::OK();
  }
  Status CreateDirs(const std::string&) override { return Status::OK(); }

 private:
  class Upload final : public WritableFile {
   public:
    Upload(MemoryStore* store, std::string path) : store_(store), path_(std::move(path)) {}
    Status Append(std::string_view d) override {
      bytes_ += d;
      return Status::OK();
    }
    Status Flush() override { return Status::OK(); }
    Status Close() override {
      std::lock_guard<std::mutex> lock(store_->mu_);
      store_->objects_[path_] = bytes_;
      return Status::OK();
    }
    void Abort() override {}
    const std::string& path() const override { return path_; }

   private:
    MemoryStore* store_;
    std::string path_, bytes_;
  };

  std::mutex mu_;
  std::map<std::string, std::string> objects_;
};

TEST(FileSystemForTest, CoreFileFunctionsReachARegisteredStore) {
  auto store = std::make_shared<MemoryStore>();
  RegisterFileSystem("memtest", store);
  {
    auto out = OutputFile::Create("memtest://b/dir/x");
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE((*out)->Append("remote bytes").ok());
    EXPECT_FALSE(*PathExists("memtest://b/dir/x"));  // published by Commit only
    ASSERT_TRUE((*out)->Commit().ok());
  }
  auto whole = ReadWholeFile("memtest://b/dir/x", {.room_before = 3, .room_after = 2});
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->bytes(), "remote bytes");
  EXPECT_EQ(whole->offset, 3u);
  EXPECT_EQ(*ReadFileToString("memtest://b/dir/x"), "remote bytes");
  auto too_big = ReadWholeFile("memtest://b/dir/x", {.max_bytes = 4});
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  auto appending = OutputFile::Create("memtest://b/dir/y", {.atomic = false, .append = true});
  EXPECT_EQ(appending.status().code(), StatusCode::kFailedPrecondition);
  {
    auto abandoned = OutputFile::Create("memtest://b/dir/z");
    ASSERT_TRUE((*abandoned)->Append("partial").ok());
  }  // destroyed without Commit
  EXPECT_FALSE(*PathExists("memtest://b/dir/z"));
  EXPECT_EQ(ListFolder("memtest://b/dir")->size(), 1u);
  EXPECT_EQ(OpenReadableFile("memtest://b/nope").status().code(), StatusCode::kNotFound);
  RegisterFileSystem("memtest", nullptr);
  EXPECT_FALSE(FileSystemFor("memtest://b/dir/x").ok());
}

// Reads `file` whole, in chunks of `chunk` bytes from the start.
std::string ReadInOrder(ReadableFile& file, size_t chunk) {
  std::string out;
  std::string buf(chunk, '\0');
  for (;;) {
    Result<size_t> got = file.ReadAt(out.size(), buf.data(), chunk);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok() || *got == 0) return out;
    out.append(buf.data(), *got);
  }
}

class RemoteCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterFileSystem("memtest", store_); }
  void TearDown() override {
    ASSERT_TRUE(SetRemoteCache({}).ok());
    RegisterFileSystem("memtest", nullptr);
  }
  void Put(const std::string& uri, const std::string& bytes) {
    ASSERT_TRUE(WriteFileAtomically(uri, bytes).ok());
  }
  size_t CachedFiles() {
    size_t n = 0;
    const Result<std::vector<FileInfo>> files = ListFolder(dir_.path());
    EXPECT_TRUE(files.ok()) << files.status();
    if (!files.ok()) return 0;
    for (const FileInfo& f : *files) n += f.path.ends_with(".cached");
    return n;
  }

  std::shared_ptr<MemoryStore> store_ = std::make_shared<MemoryStore>();
  ScratchDir dir_;
};

TEST_F(RemoteCacheTest, ASequentialReadFillsTheCacheAndTheNextOpenReadsFromDisk) {
  ASSERT_TRUE(SetRemoteCache({.dir = dir_.path(), .max_bytes = 1 << 20}).ok());
  const std::string bytes(10'000, 'q');
  Put("memtest://b/shard-0", bytes);
  const RemoteCacheStats before = GetRemoteCacheStats();
  {
    auto f = OpenReadableFile("memtest://b/shard-0");
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(ReadInOrder(**f, 3000), bytes);
  }
  EXPECT_EQ(CachedFiles(), 1u);
  auto again = OpenReadableFile("memtest://b/shard-0");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->name(), "memtest://b/shard-0");  // errors still name the object
  EXPECT_EQ(ReadInOrder(**again, 4096), bytes);
  const RemoteCacheStats after = GetRemoteCacheStats();
  EXPECT_EQ(after.misses - before.misses, 1u);
  EXPECT_EQ(after.filled - before.filled, 1u);
  EXPECT_EQ(after.hits - before.hits, 1u);
  EXPECT_EQ(after.bytes_read_from_cache - before.bytes_read_from_cache, bytes.size());
}

TEST_F(RemoteCacheTest, OutOfOrderReadsAndObjectsOverTheBudgetAreNotCached) {
  ASSERT_TRUE(SetRemoteCache({.dir = dir_.path(), .max_bytes = 1000}).ok());
  Put("memtest://b/small", std::string(500, 's'));
  Put("memtest://b/big", std::string(2000, 'b'));
  const RemoteCacheStats before = GetRemoteCacheStats();
  {
    auto f = OpenReadableFile("memtest://b/small");
    char c[10];
    ASSERT_TRUE((*f)->ReadAt(100, c, 10).ok());  // not from the start
    ASSERT_TRUE((*f)->ReadAt(0, c, 10).ok());
  }
  {
    auto f = OpenReadableFile("memtest://b/big");
    EXPECT_EQ(ReadInOrder(**f, 700).size(), 2000u);
  }
  EXPECT_EQ(CachedFiles(), 0u);
  EXPECT_EQ(GetRemoteCacheStats().not_cached - before.not_cached, 2u);
}

TEST_F(RemoteCacheTest, WholeFilesAreEvictedLeastRecentlyUsedFirst) {
  ASSERT_TRUE(SetRemoteCache({.dir = dir_.path(), .max_bytes = 250}).ok());
  for (const char* name : {"a", "b", "c"})
    Put(std::string("memtest://b/") + name, std::string(100, *name));
  auto read = [](const std::string& uri) {
    auto f = OpenReadableFile(uri);
    ASSERT_TRUE(f.ok());
    ReadInOrder(**f, 64);
  };
  read("memtest://b/a");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // coarse file times
  read("memtest://b/b");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  read("memtest://b/a");  // a hit: a is now the most recently used
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const RemoteCacheStats before = GetRemoteCacheStats();
  read("memtest://b/c");  // 300 bytes > 250: b goes
  EXPECT_EQ(GetRemoteCacheStats().evicted - before.evicted, 1u);
  EXPECT_EQ(CachedFiles(), 2u);
  const uint64_t hits = GetRemoteCacheStats().hits;
  read("memtest://b/a");
  read("memtest://b/c");
  EXPECT_EQ(GetRemoteCacheStats().hits - hits, 2u);
}

TEST_F(RemoteCacheTest, AChangedObjectIsFetchedAgainAndItsOldCopyDropped) {
  ASSERT_TRUE(SetRemoteCache({.dir = dir_.path(), .max_bytes = 1 << 20}).ok());
  Put("memtest://b/x", "version one");
  ReadInOrder(**OpenReadableFile("memtest://b/x"), 5);
  Put("memtest://b/x", "version two, longer");
  auto f = OpenReadableFile("memtest://b/x");
  EXPECT_EQ(ReadInOrder(**f, 5), "version two, longer");
  EXPECT_EQ(CachedFiles(), 1u);
}

TEST_F(RemoteCacheTest, FillOnOpenCachesRandomAccess) {
  ASSERT_TRUE(
      SetRemoteCache(
          {.dir = dir_.path(), .max_bytes = 1 << 20, .fill = RemoteCacheOptions::Fill::kOnOpen})
          .ok());
  Put("memtest://b/idx", "0123456789");
  {
    auto f = OpenReadableFile("memtest://b/idx");
    char c[3];
    ASSERT_EQ(*(*f)->ReadAt(7, c, 3), 3u);
    EXPECT_EQ(std::string(c, 3), "789");
  }
  EXPECT_EQ(CachedFiles(), 1u);
}

TEST(RemoteCacheOptionsTest, BadSettingsAreRefusedAndSizesParse) {
  EXPECT_EQ(SetRemoteCache({.dir = "/tmp/x", .max_bytes = 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SetRemoteCache({.dir = "s3://b/cache", .max_bytes = 1}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseByteSize("200G"), uint64_t{200} << 30);
  EXPECT_EQ(*ParseByteSize("512MB"), uint64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("12X").ok());
  EXPECT_FALSE(ParseByteSize("G").ok());
  EXPECT_FALSE(ParseByteSize("99999999999999999999").ok());
  EXPECT_FALSE(ParseByteSize("20000000000T").ok());
}

}  // namespace
}  // namespace sluice
