// `sluice convert images` limits (issue 37, items 8 and 9): --check full
// decodes as strictly as the restart-marker transcoder, and --resize is
// bounded by max_pixels up front. The real binary, whose peak RSS is read
// from wait4()'s rusage.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "convert_cli_util.h"
#include "test_util.h"

extern char** environ;

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::Contains;
using testing::Put;
using testing::ReadFileOrDie;
using testing::ScratchDir;
// --- The binary -----------------------------------------------------------------

struct Measured {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
  int64_t peak_rss_mb = 0;  // the child's own ru_maxrss (wait4)
};

// Runs `sluice args...` (no shell), its peak RSS from wait4().
Measured RunSluice(const ScratchDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {SLUICE_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = dir.file("stdout"), err = dir.file("stderr");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Measured m;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << argv[0];
  if (rc != 0) return m;
  int status = 0;
  rusage usage{};
  EXPECT_EQ(wait4(pid, &status, 0, &usage), pid);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.peak_rss_mb = usage.ru_maxrss / 1000;  // kB on Linux
  m.out = ReadFileOrDie(out);
  m.err = ReadFileOrDie(err);
  return m;
}

// A JPEG with some texture, so that its scan is not trivially short.
std::string PhotoJpeg() { return testing::Jpeg(96, 128, 3, 37); }

TEST(ConvertImagesLimits, CheckFullRefusesWhatALenientDecodeMakesUp) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  const std::string jpeg = PhotoJpeg();
  Put(in + "/a/good.jpg", jpeg);
  // Cut in half, EOI appended: libjpeg makes the rest up (gray).
  Put(in + "/a/cut.jpg", jpeg.substr(0, jpeg.size() / 2) + "\xFF\xD9");
  // The SOF edited to claim 11000x11000: the review's 363 MB decode.
  std::string giant = jpeg;
  const size_t sof = giant.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  giant[sof + 5] = giant[sof + 7] = static_cast<char>(11000 >> 8);
  giant[sof + 6] = giant[sof + 8] = static_cast<char>(11000 & 0xFF);
  Put(in + "/a/giant.jpg", giant);
  // Bytes before EOI that belong to no segment: every pixel is real, the
  // transcoder accepts it, so does --check full.
  Put(in + "/a/junk.jpg", jpeg.substr(0, jpeg.size() - 2) + "abc" + jpeg.substr(jpeg.size() - 2));
  Put(in + "/a/good.png", testing::Png(20, 30, 3, 1));

  // The default check reads headers only, as before: all five stored.
  Measured r = RunSluice(dir, {"convert", "images", in, "-o", dir.file("header/t")});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = RunSluice(dir, {"convert", "images", in, "-o", dir.file("full/t"), "--check", "full"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Contains(r.err, "skipped 2 images")) << r.err;
  EXPECT_TRUE(Contains(r.err, "a/cut.jpg: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "Corrupt JPEG data: premature end of data segment")) << r.err;
  EXPECT_TRUE(Contains(r.err, "a/giant.jpg: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, fmt::format("the header claims a 11000x11000 image, more than {} "
                                          "bytes can hold",
                                          giant.size())))
      << r.err;
  EXPECT_FALSE(Contains(r.err, "junk.jpg")) << r.err;
  EXPECT_TRUE(Contains(r.out, "converted 3 images")) << r.out;
  // Refused from its header: the 363 MB image is never allocated.
  EXPECT_LT(r.peak_rss_mb, 150) << "peak RSS " << r.peak_rss_mb << " MB";

  // --restart-interval refuses the same two, for the same reasons.
  r = RunSluice(dir,
                {"convert", "images", in, "-o", dir.file("restart/t"), "--restart-interval", "1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Contains(r.err, "skipped 2 images")) << r.err;
}

TEST(ConvertImagesLimits, AnAbsurdResizeIsAUsageErrorAtOnce) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  for (int i = 0; i < 9; ++i)
    Put(in + "/c/" + std::to_string(i) + ".png", testing::Png(6, 6, 3, i));
  for (const char* size : {"60000x60000", "16384x8193"}) {
    SCOPED_TRACE(size);
    const Measured r = RunSluice(dir, {"convert", "images", in, "-o", dir.file("out/t"), "--resize",
                                       size, "--workers", "1"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(Contains(r.err, "--resize")) << r.err;
    EXPECT_TRUE(Contains(r.err, "pixels an image, more than the limit of 134217728")) << r.err;
    EXPECT_LT(r.seconds, 10);
    EXPECT_LT(r.peak_rss_mb, 100);
    EXPECT_FALSE(fs::exists(dir.file("out")));
  }
  const Measured r =
      RunSluice(dir, {"convert", "images", in, "-o", dir.file("out/t"), "--resize", "60000x60000"});
  EXPECT_TRUE(Contains(r.err, "60000x60000 is 3600000000 pixels an image")) << r.err;
}

}  // namespace
}  // namespace sluice
