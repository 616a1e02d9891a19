// libFuzzer target for the Parquet reader (records/parquet_file.h): hostile
// bytes through Arrow's libparquet. The first input byte picks the options
// (rows or batches, nulls filled or not); the rest is the file, opened from
// memory, every record read and made an element. Every outcome must be
// values or an error Status: never a crash, a hang or an allocation the
// input cannot justify. Seeds: tests/fuzz/corpus/parquet (the goldens of
// tests/data/parquet). A build without Arrow fuzzes nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/records/parquet_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  sluice::ParquetReadOptions o;
  o.batch_rows = (data[0] & 1) ? 3 : 0;
  o.fill_nulls = (data[0] & 2) != 0;
  // A small cap: a decompression bomb or a lying page header must be a
  // ResourceExhausted row group, never an allocation the size it claims.
  o.max_row_group_bytes = 64 << 20;
  std::shared_ptr<sluice::ReadableFile> file = sluice::NewMemoryFile(
      "fuzz.parquet", std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  auto f = sluice::ParquetFile::Open(file, o);
  if (!f.ok()) return 0;
  // At most a few thousand records (a footer may claim billions of rows).
  const uint64_t n = std::min<uint64_t>((*f)->num_records(), 4096);
  for (uint64_t i = 0; i < n;) {
    auto run = (*f)->ReadRun(i, 1 << 16);
    if (!run.ok() || run->empty()) {
      ++i;
      continue;
    }
    for (const sluice::Record& r : *run) (void)sluice::ParquetRecordToElement(r);
    i = run->back().number + 1;
  }
  return 0;
}
