// Text line and CSV reading from the page cache, against the same-run
// reference: pread() of the same file in 1 MiB blocks (the bytes alone).
// Reported as bytes/s of the file, so the ratios read directly.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sluice/core/file.h"
#include "sluice/core/rng.h"
#include "sluice/records/csv.h"
#include "sluice/records/csv_reader.h"
#include "sluice/records/text_line_reader.h"

namespace sluice {
namespace {

constexpr size_t kBytes = size_t{64} << 20;

// A CSV file of rows like "123456,0.8125,word word,7" (~30 bytes), every
// 16th with a quoted field.
const std::string& File() {
  static const std::string path = [] {
    const std::string p = (std::filesystem::temp_directory_path() / "sluice-bench-text.csv").string();
    Rng rng(1);
    std::string s;
    s.reserve(kBytes + 64);
    static const char* kWords[] = {"alpha", "beta", "gamma", "delta", "train", "label"};
    for (int i = 0; s.size() < kBytes; ++i) {
      s += std::to_string(rng.UniformInt(1000000)) + "," + std::to_string(rng.UniformInt(1000)) +
           ".25,";
      if (i % 16 == 0) s += "\"q, \"\"x\"\"\"";
      else s += std::string(kWords[rng.UniformInt(6)]) + " " + kWords[rng.UniformInt(6)];
      s += "," + std::to_string(i % 10) + "\n";
    }
    auto out = OutputFile::Create(p);
    if (!out.ok() || !(*out)->Append(s).ok() || !(*out)->Commit().ok()) std::abort();
    return p;
  }();
  return path;
}

void BM_PreadReference(benchmark::State& state) {
  const std::string& path = File();
  std::vector<char> buf(1 << 20);
  size_t bytes = 0;
  for (auto _ : state) {
    const int fd = open(path.c_str(), O_RDONLY);
    off_t off = 0;
    ssize_t n;
    while ((n = pread(fd, buf.data(), buf.size(), off)) > 0) off += n;
    close(fd);
    bytes += static_cast<size_t>(off);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_PreadReference)->Unit(benchmark::kMillisecond);

void BM_TextLines(benchmark::State& state) {
  size_t bytes = 0, lines = 0;
  for (auto _ : state) {
    auto r = OpenTextLineReader(File(), {.compression = Compression::kNone});
    while (true) {
      auto rec = (*r)->Next();
      if (!rec.ok() || !rec->has_value()) break;
      bytes += (*rec)->data.size() + 1;
      ++lines;
      benchmark::DoNotOptimize((*rec)->data.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["lines/s"] = benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TextLines)->Unit(benchmark::kMillisecond);

// CSV records (framing only), then split and typed as CsvDataset types them.
void BM_Csv(benchmark::State& state) {
  const bool parse = state.range(0) != 0;
  size_t bytes = 0, rows = 0;
  std::vector<CsvField> fields;
  std::string scratch;
  CsvSyntaxError err;
  for (auto _ : state) {
    auto r = OpenCsvReader(File(), {.compression = Compression::kNone});
    while (true) {
      auto rec = (*r)->Next();
      if (!rec.ok() || !rec->has_value()) break;
      bytes += (*rec)->data.size() + 1;
      ++rows;
      if (!parse) continue;
      if (!SplitCsvRecord((*rec)->data, {}, &fields, &scratch, &err)) std::abort();
      int64_t a;
      float b;
      int32_t d;
      if (!ParseCsvNumber(fields[0].text, &a) || !ParseCsvNumber(fields[1].text, &b) ||
          !ParseCsvNumber(fields[3].text, &d)) {
        std::abort();
      }
      benchmark::DoNotOptimize(a + b + d);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Csv)->Arg(0)->Arg(1)->ArgName("parse")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
