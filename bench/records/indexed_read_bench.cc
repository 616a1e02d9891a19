// Random access to an indexed, uncompressed TFRecord file
// (IndexedTFRecordFile::Read), the read pattern of a global shuffle, against
// a same-run reference: raw pread() of the same framed byte ranges in the
// same order into one reused buffer, with no checks and no allocation (what
// the kernel costs alone). Reads in index order are reported too.
//
// Target: shuffled reads with both CRCs checked at least half the speed of
// the raw pread reference, from the page cache.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sluice/core/index_permutation.h"
#include "sluice/core/rng.h"
#include "sluice/records/indexed_tfrecord_file.h"
#include "sluice/records/tfrecord_writer.h"

namespace sluice {
namespace {

constexpr size_t kTotalBytes = size_t{32} << 20;

// Writes (once per process) an indexed file of records of `record_size` bytes.
const std::string& File(size_t record_size) {
  static std::map<size_t, std::string> files;
  auto it = files.find(record_size);
  if (it != files.end()) return it->second;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("sluice-bench-indexed-" + std::to_string(record_size) + ".tfrecord"))
                               .string();
  TFRecordWriterOptions opts;
  opts.write_index = true;
  auto w = TFRecordWriter::Open(path, opts);
  if (!w.ok()) std::abort();
  Rng rng(1);
  std::string payload(record_size, '\0');
  for (char& c : payload) c = static_cast<char>(rng.NextU32());
  for (size_t written = 0; written < kTotalBytes; written += record_size) {
    if (!w->Write(payload).ok()) std::abort();
  }
  if (!w->Close().ok()) std::abort();
  return files.emplace(record_size, path).first->second;
}

void BM_IndexedRead(benchmark::State& state, bool shuffled, bool verify) {
  const size_t record_size = static_cast<size_t>(state.range(0));
  IndexedTFRecordFileOptions opts;
  opts.verify_checksums = verify;
  auto file = IndexedTFRecordFile::Open(File(record_size), opts);
  if (!file.ok()) {
    state.SkipWithError(std::string(file.status().message()).c_str());
    return;
  }
  const IndexPermutation perm(file->num_records(), 7);
  Buffer scratch;
  size_t bytes = 0, records = 0;
  for (auto _ : state) {
    for (uint64_t k = 0; k < file->num_records(); ++k) {
      auto r = file->Read(shuffled ? perm(k) : k, &scratch);
      if (!r.ok()) {
        state.SkipWithError(std::string(r.status().message()).c_str());
        return;
      }
      bytes += r->data.size();
      ++records;
      benchmark::DoNotOptimize(r->data.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(records));
}

// Reference: pread() each framed record, in the same shuffled order, into one
// buffer; nothing else.
void BM_PreadShuffledReference(benchmark::State& state) {
  const size_t record_size = static_cast<size_t>(state.range(0));
  auto file = IndexedTFRecordFile::Open(File(record_size));
  if (!file.ok()) {
    state.SkipWithError(std::string(file.status().message()).c_str());
    return;
  }
  const RecordIndex& index = file->index();
  const IndexPermutation perm(index.size(), 7);
  const int fd = ::open(file->path().c_str(), O_RDONLY);
  std::vector<char> buf(record_size + 16);
  size_t bytes = 0, records = 0;
  for (auto _ : state) {
    for (uint64_t k = 0; k < index.size(); ++k) {
      const RecordIndexEntry& e = index[perm(k)];
      if (::pread(fd, buf.data(), e.length, static_cast<off_t>(e.offset)) !=
          static_cast<ssize_t>(e.length)) {
        state.SkipWithError("short pread");
        break;
      }
      bytes += e.payload_length();
      ++records;
      benchmark::DoNotOptimize(buf.data());
    }
  }
  ::close(fd);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(records));
}

BENCHMARK(BM_PreadShuffledReference)->Arg(1024)->Arg(100 << 10)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_IndexedRead, shuffled_crc, true, true)
    ->Arg(1024)
    ->Arg(100 << 10)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_IndexedRead, shuffled_nocrc, true, false)
    ->Arg(1024)
    ->Arg(100 << 10)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_IndexedRead, in_order_crc, false, true)
    ->Arg(1024)
    ->Arg(100 << 10)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
