// The Parquet read path in C++, against the same-run reference: Arrow's own
// parquet::arrow::FileReader::ReadRowGroup over every row group of the same
// file (the decode alone, into Arrow tables, one thread). sluice's
// ParquetFile (records/) and ParquetDataset (rows, and batches of
// batch_rows) decode with the same libparquet, so the ratios are what
// sluice adds: elements, tensor views, the file source. Reported as rows/s.
//
// The file: 1,048,576 rows of int64, float32, a fixed-size list of 4
// float32 and a short string (~10 bytes), row groups of 65,536 rows,
// snappy, written once to the temp folder by Arrow's writer.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <benchmark/benchmark.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "drain.h"
#include "sluice/pipeline/parquet_dataset.h"
#include "sluice/records/parquet_file.h"

namespace sluice {
namespace {

constexpr int64_t kRows = int64_t{1} << 20;
constexpr int64_t kRowGroup = 65536;

void Check(const arrow::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "parquet_read_bench: %s\n", s.ToString().c_str());
    std::abort();
  }
}

const std::string& File() {
  static const std::string path = [] {
    const std::string p =
        (std::filesystem::temp_directory_path() / "sluice-bench-read.parquet").string();
    arrow::Int64Builder id;
    arrow::FloatBuilder x;
    auto values = std::make_shared<arrow::FloatBuilder>();
    arrow::FixedSizeListBuilder vec(arrow::default_memory_pool(), values, 4);
    arrow::StringBuilder word;
    for (int64_t i = 0; i < kRows; ++i) {
      Check(id.Append(i));
      Check(x.Append(static_cast<float>(i) * 0.5f));
      Check(vec.Append());
      for (int k = 0; k < 4; ++k) Check(values->Append(static_cast<float>(i + k)));
      Check(word.Append("word-" + std::to_string(i % 100000)));
    }
    std::shared_ptr<arrow::Array> a, b, c, d;
    Check(id.Finish(&a));
    Check(x.Finish(&b));
    Check(vec.Finish(&c));
    Check(word.Finish(&d));
    auto schema =
        arrow::schema({arrow::field("id", arrow::int64()), arrow::field("x", arrow::float32()),
                       arrow::field("vec", arrow::fixed_size_list(arrow::float32(), 4)),
                       arrow::field("word", arrow::utf8())});
    auto table = arrow::Table::Make(schema, {a, b, c, d});
    auto out = arrow::io::FileOutputStream::Open(p);
    Check(out.status());
    Check(parquet::arrow::WriteTable(
        *table, arrow::default_memory_pool(), *out, kRowGroup,
        parquet::WriterProperties::Builder().compression(parquet::Compression::SNAPPY)->build()));
    Check((*out)->Close());
    return p;
  }();
  return path;
}

void SetRows(benchmark::State& state, int64_t rows) {
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
}

// The reference: Arrow's reader, every row group into a Table, one thread.
void BM_ArrowReadRowGroup(benchmark::State& state) {
  const std::string& path = File();
  int64_t rows = 0;
  for (auto _ : state) {
    auto in = arrow::io::ReadableFile::Open(path);
    Check(in.status());
    auto reader = parquet::arrow::OpenFile(*in, arrow::default_memory_pool());
    Check(reader.status());
    for (int g = 0; g < (*reader)->num_row_groups(); ++g) {
      arrow::Result<std::shared_ptr<arrow::Table>> t = (*reader)->ReadRowGroup(g);
      Check(t.status());
      rows += (*t)->num_rows();
      benchmark::DoNotOptimize(t->get());
    }
  }
  SetRows(state, rows);
}
BENCHMARK(BM_ArrowReadRowGroup)->Unit(benchmark::kMillisecond)->UseRealTime();

// records/: ParquetFile's runs made elements, batches of 1024 rows.
void BM_ParquetFileBatches(benchmark::State& state) {
  const std::string& path = File();
  int64_t rows = 0;
  for (auto _ : state) {
    auto f = ParquetFile::Open(path, {.batch_rows = 1024});
    if (!f.ok()) {
      state.SkipWithError(f.status().ToString().c_str());
      return;
    }
    for (uint64_t i = 0; i < (*f)->num_records();) {
      auto run = (*f)->ReadRun(i, size_t{1} << 20);
      if (!run.ok()) {
        state.SkipWithError(run.status().ToString().c_str());
        return;
      }
      for (const Record& r : *run) {
        auto e = ParquetRecordToElement(r);
        if (!e.ok()) {
          state.SkipWithError(e.status().ToString().c_str());
          return;
        }
        rows += (*e)[0].shape().dim(0);
      }
      i = run->back().number + 1;
    }
  }
  SetRows(state, rows);
}
BENCHMARK(BM_ParquetFileBatches)->Unit(benchmark::kMillisecond)->UseRealTime();

// ParquetDataset: one element per row (batch_rows 0) or per batch_rows rows.
void BM_ParquetDataset(benchmark::State& state) {
  const int64_t batch = state.range(0);
  Dataset ds = ParquetDataset({File()}, {.batch_rows = batch});
  std::optional<int64_t> n = bench::DrainEachIteration(state, ds);
  if (!n) return;
  SetRows(state, batch > 0 ? kRows * static_cast<int64_t>(state.iterations()) : *n);
}
BENCHMARK(BM_ParquetDataset)
    ->ArgName("batch_rows")
    ->Arg(0)
    ->Arg(1024)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
