// core/file.h: reading whole files under a cap, atomic output, memory files.
#include "sluice/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace sluice {
namespace {

using testing::ReadFileOrDie;
using testing::ScratchDir;
using testing::WriteFileOrDie;
namespace fs = std::filesystem;

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ReadWholeFileTest, ReadsTheBytesIntoAnAlignedBufferWithRoomOnBothSides) {
  ScratchDir dir;
  const std::string bytes = "hello, file layer";
  WriteFileOrDie(dir.file("a"), bytes);
  ReadWholeFileOptions o;
  o.room_before = 12;
  o.room_after = 4;
  SLUICE_ASSERT_OK_AND_ASSIGN(WholeFile f, ReadWholeFile(dir.file("a"), o));
  EXPECT_EQ(f.bytes(), bytes);
  EXPECT_EQ(f.offset, 12u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.buffer.data()) % Buffer::kAlignment, 0u);
  EXPECT_GE(f.buffer.size(), 12 + bytes.size() + 4);

  SLUICE_ASSERT_OK_AND_ASSIGN(std::string s, ReadFileToString(dir.file("a")));
  EXPECT_EQ(s, bytes);
  WriteFileOrDie(dir.file("empty"), "");
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string e, ReadFileToString(dir.file("empty")));
  EXPECT_EQ(e, "");
}

TEST(ReadWholeFileTest, TheCapIsCheckedBeforeAnythingIsAllocated) {
  ScratchDir dir;
  // A sparse file of 1 TiB: reading it would need the memory, checking
  // its size does not.
  const std::string huge = dir.file("huge");
  WriteFileOrDie(huge, "");
  ASSERT_EQ(::truncate(huge.c_str(), off_t{1} << 40), 0);
  SLUICE_EXPECT_ERROR(ReadWholeFile(huge), StatusCode::kResourceExhausted, huge);
  SLUICE_EXPECT_ERROR(ReadFileToString(huge, 100), StatusCode::kResourceExhausted,
                      "more than the limit of 100");
  WriteFileOrDie(dir.file("b"), std::string(101, 'x'));
  SLUICE_EXPECT_ERROR(ReadFileToString(dir.file("b"), 100), StatusCode::kResourceExhausted,
                      dir.file("b"));
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string ok, ReadFileToString(dir.file("b"), 101));
  EXPECT_EQ(ok.size(), 101u);
}

TEST(ReadWholeFileTest, MissingFilesAndFoldersAreNamed) {
  ScratchDir dir;
  SLUICE_EXPECT_ERROR(ReadWholeFile(dir.file("nope")), StatusCode::kNotFound, dir.file("nope"));
  SLUICE_EXPECT_ERROR(ReadWholeFile(dir.path()), StatusCode::kInvalidArgument, "is a directory");
  SLUICE_EXPECT_ERROR(OpenReadableFile(dir.path()), StatusCode::kFailedPrecondition,
                      "is a directory");
}

TEST(ReadWholeFileTest, APipeIsReadToItsEndWithinTheCap) {
  ScratchDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string payload(200 * 1024, 'p');  // more than the 64 KiB first guess
  std::thread writer([&] { WriteFileOrDie(fifo, payload); });
  SLUICE_ASSERT_OK_AND_ASSIGN(std::string got, ReadFileToString(fifo));
  writer.join();
  EXPECT_EQ(got, payload);

  // Over the cap: the reader stops and closes; the writer sees EPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  std::thread writer2([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    for (size_t done = 0; done < payload.size();) {
      const ssize_t n = ::write(fd, payload.data() + done, payload.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  Result<std::string> capped = ReadFileToString(fifo, 100 * 1024);
  writer2.join();
  SLUICE_EXPECT_ERROR(capped, StatusCode::kResourceExhausted, "grew while read");
}

TEST(ReadableFileTest, MemoryAndPosixFilesReadTheSameAtAnyOffset) {
  ScratchDir dir;
  const std::string bytes = "0123456789";
  WriteFileOrDie(dir.file("f"), bytes);
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadableFile> posix, OpenReadableFile(dir.file("f")));
  std::unique_ptr<ReadableFile> mem = NewMemoryFile("mem", bytes);
  for (ReadableFile* f : {posix.get(), mem.get()}) {
    char buf[8];
    SLUICE_ASSERT_OK_AND_ASSIGN(size_t n, f->ReadAt(6, buf, sizeof(buf)));
    EXPECT_EQ(std::string(buf, n), "6789");
    SLUICE_ASSERT_OK_AND_ASSIGN(size_t past, f->ReadAt(100, buf, sizeof(buf)));
    EXPECT_EQ(past, 0u);
    SLUICE_ASSERT_OK_AND_ASSIGN(uint64_t size, f->Size());
    EXPECT_EQ(size, bytes.size());
  }
  EXPECT_EQ(mem->name(), "mem");
  EXPECT_EQ(posix->name(), dir.file("f"));
}

TEST(OutputFileTest, NothingAppearsUnderTheFinalNameBeforeCommit) {
  ScratchDir dir;
  const std::string path = dir.file("out.bin");
  WriteFileOrDie(path, "old");
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputFile> f, OutputFile::Create(path));
  SLUICE_ASSERT_OK(f->Append("new "));
  SLUICE_ASSERT_OK(f->Append("bytes"));
  EXPECT_EQ(ReadFileOrDie(path), "old");
  EXPECT_NE(f->write_path(), path);
  EXPECT_TRUE(fs::path(f->write_path()).filename().string().starts_with(".out.bin.tmp-"));
  SLUICE_ASSERT_OK(f->Commit());
  EXPECT_EQ(ReadFileOrDie(path), "new bytes");
  EXPECT_EQ(Listing(dir.path()), std::vector<std::string>{"out.bin"});
  SLUICE_EXPECT_ERROR(f->Append("x"), StatusCode::kFailedPrecondition, "closed");
}

TEST(OutputFileTest, AnAbandonedOrDestroyedFileLeavesNothingBehind) {
  ScratchDir dir;
  {
    SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputFile> f, OutputFile::Create(dir.file("a")));
    SLUICE_ASSERT_OK(f->Append("partial"));
  }
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputFile> g, OutputFile::Create(dir.file("b")));
  SLUICE_ASSERT_OK(g->Append("partial"));
  g->Abandon();
  EXPECT_TRUE(Listing(dir.path()).empty());
}

TEST(OutputFileTest, SyncAndDirectModesWrite) {
  ScratchDir dir;
  OutputFileOptions sync;
  sync.sync = true;
  SLUICE_ASSERT_OK(WriteFileAtomically(dir.file("synced"), "durable", sync));
  EXPECT_EQ(ReadFileOrDie(dir.file("synced")), "durable");
  SLUICE_ASSERT_OK(SyncParentFolder(dir.file("synced")));

  OutputFileOptions direct;
  direct.atomic = false;
  SLUICE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputFile> f,
                              OutputFile::Create(dir.file("direct"), direct));
  EXPECT_EQ(f->write_path(), dir.file("direct"));
  SLUICE_ASSERT_OK(f->Append("now"));
  SLUICE_ASSERT_OK(f->Commit());
  EXPECT_EQ(ReadFileOrDie(dir.file("direct")), "now");
}

TEST(OutputFileTest, AMissingFolderIsNamed) {
  ScratchDir dir;
  const std::string path = dir.file("no/such/folder/f");
  SLUICE_EXPECT_ERROR(WriteFileAtomically(path, "x"), StatusCode::kNotFound, path);
}

}  // namespace
}  // namespace sluice
