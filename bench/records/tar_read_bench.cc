// Tar shard (WebDataset) read throughput from the page cache, against a
// same-run reference: raw pread() of the same file in 1 MiB blocks (what
// the kernel costs alone). Samples of two members (a "jpg" of the given
// size and a 1-byte "cls"); reading a sample includes grouping, checking
// every header (twice: while grouping and in ForEachTarMember) and walking
// it to its members' payloads, as WebDatasetDataset's ToElement does.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/records/tar_reader.h"
#include "sluice/records/tar_writer.h"

namespace sluice {
namespace {

constexpr size_t kTotalBytes = size_t{64} << 20;

// Writes (once per process) a shard of samples whose jpg has `size` bytes.
const std::string& File(size_t size) {
  static std::map<size_t, std::string> files;
  auto it = files.find(size);
  if (it != files.end()) return it->second;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("sluice-bench-tar-" + std::to_string(size) + ".tar"))
                               .string();
  auto w = TarWriter::Create(path);
  if (!w.ok()) std::abort();
  Rng rng(1);
  std::string payload(size, '\0');
  for (char& c : payload) c = static_cast<char>(rng.UniformInt(256));
  char key[32];
  for (size_t written = 0, i = 0; written < kTotalBytes; written += size + 1536, ++i) {
    std::snprintf(key, sizeof(key), "train/%08zu", i);
    if (!(*w)->Add(std::string(key) + ".jpg", payload).ok()) std::abort();
    if (!(*w)->Add(std::string(key) + ".cls", "7").ok()) std::abort();
  }
  if (!(*w)->Close().ok()) std::abort();
  return files.emplace(size, path).first->second;
}

void BM_ReadTar(benchmark::State& state) {
  const std::string& path = File(static_cast<size_t>(state.range(0)));
  size_t bytes = 0, samples = 0;
  for (auto _ : state) {
    auto reader = TarReader::Open(path);
    while (true) {
      auto r = (*reader)->Next();
      if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
      if (!r.ok() || !r->has_value()) break;
      const Record& rec = **r;
      Status walked = ForEachTarMember(rec.data, rec.offset, path, 1 << 20,
                                       [&](const TarMember& m) {
                                         benchmark::DoNotOptimize(m.data.data());
                                         return Status::OK();
                                       });
      if (!walked.ok()) state.SkipWithError(std::string(walked.message()).c_str());
      bytes += rec.data.size();
      ++samples;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(samples));
}

// Reference: pread() the same file in 1 MiB blocks, nothing else.
void BM_PreadReference(benchmark::State& state) {
  const std::string& path = File(static_cast<size_t>(state.range(0)));
  std::vector<char> buf(1 << 20);
  size_t bytes = 0;
  for (auto _ : state) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    off_t off = 0;
    ssize_t n;
    while ((n = ::pread(fd, buf.data(), buf.size(), off)) > 0) {
      off += n;
      bytes += static_cast<size_t>(n);
      benchmark::DoNotOptimize(buf.data());
    }
    ::close(fd);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

BENCHMARK(BM_PreadReference)->Arg(4 << 10)->Arg(100 << 10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadTar)->Arg(4 << 10)->Arg(100 << 10)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
