// The physical references of scripts/bench-peers.sh, measured in the same
// run as the pipelines. Prints one JSON line.
//
//   bare_decode --mode decode --images DIR [--threads N] [--seconds 10]
//       Bare libjpeg-turbo: every JPEG under DIR (recursively) is read into
//       memory, then N threads, each with its own TurboJPEG handle, decode
//       them in turn (tjDecompress2, RGB, fast DCT as TensorFlow's default)
//       into a reused buffer. Items: images/s. The limit of case 1: a
//       pipeline that decodes every image whole cannot go faster.
//   bare_decode --mode read --files GLOB [--threads N] [--seconds 10]
//       The page cache and memory: N threads pread the TFRecord files in
//       1 MiB blocks (files already cached), and N threads memcpy 64 MiB
//       buffers. Items: records/s at the pread speed (bytes/s divided by the
//       mean framed record size), plus both speeds in bytes/s.
#include <fcntl.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/args.h"
#include "peer_util.h"

namespace {

struct Args {
  std::string mode;
  std::string images;
  std::string files;
  int threads = 0;
  double seconds = 10;
};

constexpr char kProgram[] = "bare_decode";

[[noreturn]] void Die(const std::string& message) { sluice::peers::Die(kProgram, message); }

Args ParseArgs(int argc, char** argv) {
  Args a;
  sluice::bench::CommandLine args(kProgram,
                                  "--mode decode --images DIR | --mode read --files GLOB");
  args.Add("--mode", &a.mode)
      .Add("--images", &a.images)
      .Add("--files", &a.files)
      .Add("--threads", &a.threads)
      .Add("--seconds", &a.seconds)
      .Parse(argc, argv);
  if (!(a.mode == "decode" && !a.images.empty()) && !(a.mode == "read" && !a.files.empty())) {
    args.UsageError("need --mode decode --images DIR, or --mode read --files GLOB");
  }
  if (a.threads <= 0) a.threads = static_cast<int>(std::thread::hardware_concurrency());
  return a;
}

int Decode(const Args& a) {
  std::vector<std::string> jpegs;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(a.images)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    jpegs.push_back(ss.str());
  }
  if (jpegs.empty()) Die("no files under " + a.images);
  double elapsed = 0;
  const sluice::peers::Usage usage = sluice::peers::Usage::Now();
  const double images = sluice::peers::RunFor(
      a.threads, a.seconds,
      [&](int t, const std::atomic<bool>& stop) {
        tjhandle h = tjInitDecompress();
        std::vector<unsigned char> out;
        double n = 0;
        for (size_t i = t; !stop.load(std::memory_order_relaxed); i += a.threads) {
          const std::string& jpeg = jpegs[i % jpegs.size()];
          const auto* src = reinterpret_cast<const unsigned char*>(jpeg.data());
          int w = 0, h_px = 0, sub = 0, space = 0;
          if (tjDecompressHeader3(h, src, jpeg.size(), &w, &h_px, &sub, &space) != 0) {
            Die(std::string("header: ") + tjGetErrorStr2(h));
          }
          out.resize(static_cast<size_t>(w) * h_px * 3);
          if (tjDecompress2(h, src, jpeg.size(), out.data(), w, 0, h_px, TJPF_RGB,
                            TJFLAG_FASTDCT) != 0) {
            Die(std::string("decode: ") + tjGetErrorStr2(h));
          }
          ++n;
        }
        tjDestroy(h);
        return n;
      },
      &elapsed);
  const std::string used = sluice::peers::Usage::Json(usage, elapsed);
  std::printf(
      "{\"system\":\"bare\",\"case\":\"decode\",\"items_per_s\":%.1f,\"images\":%zu,"
      "\"threads\":%d,\"seconds\":%.3f%s}\n",
      images / elapsed, jpegs.size(), a.threads, elapsed, used.c_str());
  return 0;
}

int Read(const Args& a) {
  const std::vector<std::string> files = sluice::peers::GlobRecordFiles(kProgram, a.files);
  // Count records by walking the framing (8-byte length, 4-byte CRC, data,
  // 4-byte CRC) once, for the mean framed size.
  int64_t records = 0, bytes = 0;
  for (const std::string& f : files) {
    int fd = open(f.c_str(), O_RDONLY);
    if (fd < 0) Die("cannot open " + f);
    struct stat st;
    fstat(fd, &st);
    bytes += st.st_size;
    for (int64_t off = 0; off + 12 <= st.st_size; ++records) {
      uint64_t len = 0;
      if (pread(fd, &len, 8, off) != 8) Die("short read in " + f);
      off += 16 + static_cast<int64_t>(len);
    }
    close(fd);
  }
  const double record_bytes = static_cast<double>(bytes) / records;

  constexpr size_t kBlock = 1 << 20;
  double read_s = 0;
  const double read_bytes = sluice::peers::RunFor(
      a.threads, a.seconds / 2,
      [&](int t, const std::atomic<bool>& stop) {
        std::vector<char> buf(kBlock);
        double n = 0;
        for (size_t i = t; !stop.load(std::memory_order_relaxed); i += a.threads) {
          int fd = open(files[i % files.size()].c_str(), O_RDONLY);
          ssize_t got;
          for (off_t off = 0; (got = pread(fd, buf.data(), kBlock, off)) > 0; off += got) {
            n += static_cast<double>(got);
            if (stop.load(std::memory_order_relaxed)) break;
          }
          close(fd);
        }
        return n;
      },
      &read_s);

  constexpr size_t kCopy = 64 << 20;
  double copy_s = 0;
  const double copy_bytes = sluice::peers::RunFor(
      a.threads, a.seconds / 2,
      [&](int, const std::atomic<bool>& stop) {
        std::vector<char> src(kCopy, 1), dst(kCopy, 0);
        double n = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          for (size_t off = 0; off < kCopy; off += kBlock) {
            std::memcpy(dst.data() + off, src.data() + off, kBlock);
          }
          n += kCopy;
          src[static_cast<size_t>(n) % kCopy] ^= dst[0];
        }
        return n;
      },
      &copy_s);
  std::printf(
      "{\"system\":\"bare\",\"case\":\"read\",\"items_per_s\":%.1f,\"pread_bytes_per_s\":%.0f,"
      "\"memcpy_bytes_per_s\":%.0f,\"record_bytes\":%.1f,\"records\":%lld,\"threads\":%d}\n",
      read_bytes / read_s / record_bytes, read_bytes / read_s, copy_bytes / copy_s, record_bytes,
      static_cast<long long>(records), a.threads);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = ParseArgs(argc, argv);
  if (a.mode == "decode" && !a.images.empty()) return Decode(a);
  return Read(a);
}
