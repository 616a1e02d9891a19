// TFRecord read throughput from the page cache, against two same-run
// references: memcpy of the same bytes (the physical limit of moving them)
// and raw pread() of the file in 1 MiB blocks (what the kernel costs alone).
//
// Target (docs/perf.md): uncompressed reading with both CRCs checked at
// least 2 GB/s on one core, and at least a quarter of memcpy.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sluice/core/rng.h"
#include "sluice/records/tfrecord_reader.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

constexpr size_t kTotalBytes = size_t{64} << 20;  // per uncompressed file
constexpr size_t kCompressedTotal = size_t{16} << 20;

// Text-like payloads (compress about 3:1), deterministic.
std::string Payload(Rng& rng, size_t n) {
  static const char kWords[][8] = {"image", "label", "the ",  "cat ",  "dog ",
                                   "train", "0.25 ", "jpeg ", "float", "bytes"};
  std::string s;
  s.reserve(n + 8);
  while (s.size() < n) s += kWords[rng.UniformInt(10)];
  s.resize(n);
  return s;
}

// Writes (once per process) a file of records of `record_size` bytes.
const std::string& File(size_t record_size, Compression c) {
  static std::map<std::pair<size_t, Compression>, std::string> files;
  auto key = std::make_pair(record_size, c);
  auto it = files.find(key);
  if (it != files.end()) return it->second;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("sluice-bench-" + std::to_string(record_size) + "-" +
                             std::string(CompressionName(c)) + ".tfrecord"))
                               .string();
  TFRecordWriterOptions opts;
  opts.compression = c;
  auto w = TFRecordWriter::Open(path, opts);
  Rng rng(1);
  const size_t total = c == Compression::kNone ? kTotalBytes : kCompressedTotal;
  std::vector<std::string> pool;
  for (int i = 0; i < 16; ++i) pool.push_back(Payload(rng, record_size));
  for (size_t written = 0, i = 0; written < total; written += record_size, ++i) {
    if (!w->Write(pool[i % pool.size()]).ok()) std::abort();
  }
  if (!w->Close().ok()) std::abort();
  return files.emplace(key, path).first->second;
}

void BM_ReadTFRecord(benchmark::State& state, Compression c, bool verify) {
  const size_t record_size = static_cast<size_t>(state.range(0));
  const std::string& path = File(record_size, c);
  TFRecordReaderOptions opts;
  opts.compression = c;
  opts.verify_checksums = verify;
  size_t bytes = 0, records = 0;
  for (auto _ : state) {
    auto reader = TFRecordReader::Open(path, opts);
    while (true) {
      auto r = reader->Next();
      if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
      if (!r.ok() || !r->has_value()) break;
      bytes += (*r)->data.size();
      ++records;
      benchmark::DoNotOptimize((*r)->data.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(records));
}

// Reference: pread() the uncompressed file in 1 MiB blocks, nothing else.
void BM_PreadReference(benchmark::State& state) {
  const std::string& path = File(static_cast<size_t>(state.range(0)), Compression::kNone);
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

// Reference: memcpy of 64 MiB through a 1 MiB destination, the same
// bytes-moved pattern as copying the file out of the page cache.
void BM_MemcpyReference(benchmark::State& state) {
  std::vector<char> src(kTotalBytes, 'x'), dst(1 << 20);
  size_t bytes = 0;
  for (auto _ : state) {
    for (size_t off = 0; off < src.size(); off += dst.size()) {
      std::memcpy(dst.data(), src.data() + off, dst.size());
      benchmark::ClobberMemory();
    }
    bytes += src.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

BENCHMARK(BM_MemcpyReference)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PreadReference)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadTFRecord, none_crc, Compression::kNone, true)
    ->Arg(1024)
    ->Arg(100 << 10)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadTFRecord, none_nocrc, Compression::kNone, false)
    ->Arg(1024)
    ->Arg(100 << 10)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadTFRecord, gzip_crc, Compression::kGzip, true)
    ->Arg(1024)
    ->Arg(100 << 10)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadTFRecord, zlib_crc, Compression::kZlib, true)
    ->Arg(1024)
    ->Arg(100 << 10)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
