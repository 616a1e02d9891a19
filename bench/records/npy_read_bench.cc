// Fixed-length record and NumPy row reading from the page cache, against
// the same-run reference: pread() of the same file in 1 MiB blocks (what
// the kernel costs alone). Each reader benchmark reports `vs_pread`, its
// byte rate over the reference's on the same file.
//
// Files (made once per process in the temp folder): 64 MiB of 3072-byte
// fixed-length records (CIFAR-10's row size) plain and 16 MiB gzipped; a
// 64 MiB float32 .npy of 768-wide rows; a 64 MiB uint16 token .npy read as
// 1024-token windows.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/core/rng.h"
#include "sluice/records/fixed_length_reader.h"
#include "sluice/records/indexed_record_reader.h"
#include "sluice/records/npy_rows_file.h"

namespace sluice {
namespace {

constexpr size_t kTotal = size_t{64} << 20;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sluice-bench-" + name)).string();
}

std::string RandomBytes(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::string s(n, '\0');
  // Text-like (compresses about 3:1), as tfrecord_read_bench's payloads.
  static const char kWords[][8] = {"image", "label", "the ",  "cat ",  "dog ",
                                   "train", "0.25 ", "jpeg ", "float", "bytes"};
  size_t i = 0;
  while (i < n) {
    const char* w = kWords[rng.UniformInt(10)];
    for (; *w && i < n; ++w) s[i++] = *w;
  }
  return s;
}

const std::string& FixedLengthFile(Compression c) {
  static std::map<Compression, std::string> files;
  if (auto it = files.find(c); it != files.end()) return it->second;
  const std::string path = TempPath(std::string("fixed-") + std::string(CompressionName(c)));
  const size_t total = c == Compression::kNone ? kTotal : kTotal / 4;
  std::string bytes = RandomBytes(total / 3072 * 3072, 1);
  if (c != Compression::kNone) {
    // The gzip tool (TFRecordWriter's compressor would add framing).
    const std::string raw = path + ".raw";
    if (!WriteFileAtomically(raw, bytes).ok()) std::abort();
    if (std::system(("gzip -c -1 " + raw + " > " + path).c_str()) != 0) std::abort();
    std::remove(raw.c_str());
  } else if (!WriteFileAtomically(path, bytes).ok()) {
    std::abort();
  }
  return files.emplace(c, path).first->second;
}

std::string NpyBytes(const std::string& descr, const std::vector<int64_t>& shape,
                     const std::string& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (int64_t d : shape) dict += std::to_string(d) + ", ";
  dict += "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + data;
}

const std::string& NpyFile(bool tokens) {
  static std::map<bool, std::string> files;
  if (auto it = files.find(tokens); it != files.end()) return it->second;
  const std::string path = TempPath(tokens ? "tokens.npy" : "rows.npy");
  const std::string bytes =
      tokens ? NpyBytes("<u2", {static_cast<int64_t>(kTotal / 2)}, RandomBytes(kTotal, 2))
             : NpyBytes("<f4", {static_cast<int64_t>(kTotal / 3072), 768},
                        RandomBytes(kTotal / 3072 * 3072, 3));
  if (!WriteFileAtomically(path, bytes).ok()) std::abort();
  return files.emplace(tokens, path).first->second;
}

// Bytes per second of pread() over `path` in 1 MiB blocks, measured once,
// after the first benchmark of the file ran (the file is then in the page
// cache and written back, as it is for the readers).
double PreadRate(const std::string& path) {
  static std::map<std::string, double> rates;
  if (auto it = rates.find(path); it != rates.end()) return it->second;
  std::vector<char> buf(1 << 20);
  size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  // At least 5 passes and half a second: the reference must not be noisier
  // than what it is compared with.
  for (int rep = 0;
       rep < 5 || std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500);
       ++rep) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    off_t off = 0;
    ssize_t n;
    while ((n = ::pread(fd, buf.data(), buf.size(), off)) > 0) {
      off += n;
      bytes += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rates[path] = static_cast<double>(bytes) / s;
}

void Drain(benchmark::State& state, RecordReader& reader, size_t* bytes, size_t* records) {
  for (;;) {
    auto r = reader.Next();
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    if (!r.ok() || !r->has_value()) break;
    *bytes += (*r)->data.size();
    ++*records;
    benchmark::DoNotOptimize((*r)->data.data());
  }
}

void Report(benchmark::State& state, const std::string& path, size_t bytes, size_t records,
            double seconds) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(records));
  state.counters["vs_pread"] = static_cast<double>(bytes) / seconds / PreadRate(path);
}

template <typename OpenFn>
void Run(benchmark::State& state, const std::string& path, OpenFn open) {
  size_t bytes = 0, records = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::unique_ptr<RecordReader> reader = open();
    Drain(state, *reader, &bytes, &records);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Report(state, path, bytes, records, s);
}

void BM_FixedLength(benchmark::State& state, Compression c) {
  const std::string& path = FixedLengthFile(c);
  FixedLengthRecordOptions o;
  o.record_bytes = 3072;
  o.compression = c;
  Run(state, path, [&] { return OpenFixedLengthRecordReader(path, o).value(); });
}

void BM_NpyRows(benchmark::State& state) {
  const std::string& path = NpyFile(false);
  Run(state, path, [&] {
    auto rows = NpyRowsFile::Make(path, OpenNpyArrays(path).value()).value();
    return NewIndexedRecordReader(rows, 1 << 20);
  });
}

void BM_NpyWindows(benchmark::State& state) {
  const std::string& path = NpyFile(true);
  Run(state, path, [&] {
    auto rows = NpyRowsFile::Make(path, OpenNpyArrays(path).value(), 1024).value();
    return NewIndexedRecordReader(rows, 1 << 20);
  });
}

// Windows at random positions (a global shuffle's reads): one pread each.
void BM_NpyWindowsRandom(benchmark::State& state) {
  const std::string& path = NpyFile(true);
  auto rows = NpyRowsFile::Make(path, OpenNpyArrays(path).value(), 1024).value();
  const uint64_t n = rows->num_records();
  Rng rng(9);
  size_t bytes = 0, records = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (uint64_t k = 0; k < n; ++k) {
      auto r = rows->Read(rng.UniformInt(n));
      if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
      bytes += r->data.size();
      ++records;
      benchmark::DoNotOptimize(r->data.data());
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Report(state, path, bytes, records, s);
}

BENCHMARK_CAPTURE(BM_FixedLength, none, Compression::kNone)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FixedLength, gzip, Compression::kGzip)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NpyRows)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NpyWindows)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NpyWindowsRandom)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
