// `sluice convert images` limits (issue 37, items 8 and 9): --check full
// decodes as strictly as the restart-marker transcoder, --resize is bounded
// by max_pixels up front, and --ram-budget bounds what the workers' decodes
// hold together. The MemoryGate and ImageWorkBytes directly, and the real
// binary, whose peak RSS is read from wait4()'s rusage.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "convert_cli_util.h"
#include "image_memory.h"
#include "memory_gate.h"
#include "sanitizer_slowdown.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/png.h"
#include "test_util.h"

extern char** environ;

namespace sluice {
namespace {

namespace fs = std::filesystem;
using testing::Contains;
using testing::Put;
using testing::ReadFileOrDie;
using testing::ScratchDir;
using tools::ImageWork;
using tools::ImageWorkBytes;
using tools::MemoryGate;

constexpr uint64_t kMB = 1000 * 1000;

// --- MemoryGate ---------------------------------------------------------------

TEST(MemoryGate, HoldsWithinTheBudgetAcrossThreads) {
  MemoryGate gate(100);
  std::atomic<int64_t> held{0};
  std::atomic<int64_t> worst{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const uint64_t n = 10 + (t * 7 + i * 13) % 50;  // 10..59: two or more never fit in 100 all
        MemoryGate::Hold hold = gate.Acquire(n);
        const int64_t now = held += static_cast<int64_t>(n);
        int64_t w = worst.load();
        while (now > w && !worst.compare_exchange_weak(w, now)) {
        }
        std::this_thread::yield();
        held -= static_cast<int64_t>(n);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(worst.load(), 100);
  EXPECT_LE(gate.peak(), 100u);
  EXPECT_GT(gate.peak(), 59u);  // several at once did happen
}

TEST(MemoryGate, ARequestOverTheBudgetGoesAloneAndIsNotStarved) {
  MemoryGate gate(100);
  MemoryGate::Hold small = gate.Acquire(30);
  std::atomic<bool> big_in{false};
  std::thread big([&] {
    MemoryGate::Hold h = gate.Acquire(500);  // more than the whole budget
    big_in = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  // The big one waits for the small one, and a later small request waits
  // behind the big one (first come, first served), although it would fit.
  while (gate.waits() < 1) std::this_thread::yield();
  std::atomic<bool> late_in{false};
  std::thread late([&] {
    MemoryGate::Hold h = gate.Acquire(10);
    late_in = true;
    EXPECT_TRUE(big_in.load());
  });
  while (gate.waits() < 2) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(big_in.load());
  EXPECT_FALSE(late_in.load());
  small = MemoryGate::Hold();  // released
  big.join();
  late.join();
  EXPECT_TRUE(late_in.load());
  EXPECT_EQ(gate.peak(), 500u);  // alone
  // Nothing is held now: the next one passes at once.
  MemoryGate::Hold again = gate.Acquire(100);
  EXPECT_EQ(again.bytes(), 100u);
  EXPECT_EQ(gate.waits(), 2u);
}

// --- ImageWorkBytes -------------------------------------------------------------

TEST(ImageWorkBytes, CountsTheDecodeTheResizeAndTheTranscode) {
  const Tensor zeros = Tensor::Allocate(DType::kUInt8, Shape{600, 800, 4}).value();
  const std::string png = ops::EncodePng(zeros).value();
  ImageWork none;
  EXPECT_EQ(ImageWorkBytes(png, ops::ImageFormat::kPng, none).value(), 0u);
  ImageWork decode;
  decode.decoded = Shape{600, 800, 4};
  const uint64_t decoded = ImageWorkBytes(png, ops::ImageFormat::kPng, decode).value();
  EXPECT_GE(decoded, 600u * 800 * 4 + png.size());
  EXPECT_LE(decoded, 600u * 800 * 4 + png.size() + 2 * kMB);
  // To 3 channels: libspng's RGBA scratch image as well.
  decode.decoded = Shape{600, 800, 3};
  EXPECT_GE(ImageWorkBytes(png, ops::ImageFormat::kPng, decode).value(), 600u * 800 * 7);
  decode.resized = Shape{300, 400, 3};
  EXPECT_GE(ImageWorkBytes(png, ops::ImageFormat::kPng, decode).value(),
            600u * 800 * 7 + 9u * 300 * 400 * 3);

  const Tensor rgb = Tensor::Allocate(DType::kUInt8, Shape{600, 800, 3}).value();
  const std::string baseline = ops::EncodeJpeg(rgb).value();
  const std::string progressive = ops::EncodeJpeg(rgb, {.progressive = true}).value();
  ImageWork jpeg;
  jpeg.decoded = Shape{600, 800, 3};
  const uint64_t plain = ImageWorkBytes(baseline, ops::ImageFormat::kJpeg, jpeg).value();
  EXPECT_GE(plain, 600u * 800 * 3);
  // 4:2:0 coefficients: 1.5 samples a pixel, 2 bytes each.
  EXPECT_GE(ImageWorkBytes(progressive, ops::ImageFormat::kJpeg, jpeg).value(),
            600u * 800 * 3 + 600u * 800 * 3);
  ImageWork transcode;
  transcode.transcode = true;
  EXPECT_GE(ImageWorkBytes(baseline, ops::ImageFormat::kJpeg, transcode).value(),
            600u * 800 * 3 + 4 * baseline.size());
}

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
  if (!testing::kUnderSanitizer) {
    EXPECT_LT(r.peak_rss_mb, 150) << "peak RSS " << r.peak_rss_mb << " MB";
  }

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
    if (!testing::kUnderSanitizer) {
      EXPECT_LT(r.peak_rss_mb, 100);
    }
    EXPECT_FALSE(fs::exists(dir.file("out")));
  }
  const Measured r =
      RunSluice(dir, {"convert", "images", in, "-o", dir.file("out/t"), "--resize", "60000x60000"});
  EXPECT_TRUE(Contains(r.err, "60000x60000 is 3600000000 pixels an image")) << r.err;
}

// Zeros: a 100 MB decode in a file of about 100 KB, like the review's
// 522 KB PNG that decodes to 533 MB.
std::string ZeroPng(int64_t side) {
  Tensor zeros = Tensor::Allocate(DType::kUInt8, Shape{side, side, 4}).value();
  std::memset(zeros.raw_data(), 0, zeros.byte_size());
  return ops::EncodePng(zeros, {.compression = 1}).value();
}

TEST(ConvertImagesLimits, RamBudgetBoundsWhatTheWorkersDecodeAtOnce) {
  ScratchDir dir;
  const std::string in = dir.file("in");
  const std::string png = ZeroPng(5000);  // 100 MB decoded
  for (int i = 0; i < 4; ++i) Put(in + "/c/" + std::to_string(i) + ".png", png);
  const std::vector<std::string> base = {"convert",   "images", in,         "--check", "full",
                                         "--workers", "4",      "--shards", "1"};
  auto with = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = base;
    args.push_back("-o");
    args.push_back(dir.file(out));
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  // 150 MB: one 100 MB decode at a time.
  Measured r = RunSluice(dir, with({"--ram-budget", "150"}, "one/t"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "converted 4 images")) << r.out;
  // One decode (100 MB) plus the program; two at once would pass 200 MB.
  if (!testing::kUnderSanitizer) {
    EXPECT_LT(r.peak_rss_mb, 180) << "peak RSS " << r.peak_rss_mb << " MB";
  }
  const int64_t gated = r.peak_rss_mb;

  // A budget smaller than one image: each still converts, alone.
  r = RunSluice(dir, with({"--ram-budget", "1"}, "tiny/t"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (!testing::kUnderSanitizer) {
    EXPECT_LT(r.peak_rss_mb, 180) << "peak RSS " << r.peak_rss_mb << " MB";
  }

  // For scale (not asserted: how far the workers overlap depends on the
  // scheduler): a budget that lets all four decode at once.
  r = RunSluice(dir, with({"--ram-budget", "100000"}, "all/t"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::printf("peak RSS: %lld MB with --ram-budget 150, %lld MB with 100000 (4 workers)\n",
              static_cast<long long>(gated), static_cast<long long>(r.peak_rss_mb));
}

TEST(ConvertImagesLimits, RamBudgetMustBePositive) {
  ScratchDir dir;
  Put(dir.file("in/c/0.png"), testing::Png(6, 6, 3, 1));
  const Measured r = RunSluice(
      dir, {"convert", "images", dir.file("in"), "-o", dir.file("out/t"), "--ram-budget", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "--ram-budget: Value 0 not in range")) << r.err;
}

}  // namespace
}  // namespace sluice
