// libFuzzer target for the TFRecord reader and the index parser.
//
// The first input byte picks the reader options (compression, buffer size,
// truncated-tail mode, checksum verification); the rest is the file. Every
// outcome must be records, a clean end, or an error Status: never a crash,
// a hang, or an allocation larger than the input can justify.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sluice/records/record_index.h"
#include "sluice/records/tfrecord_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  sluice::TFRecordReaderOptions opts;
  constexpr sluice::Compression kCompressions[] = {
      sluice::Compression::kAuto, sluice::Compression::kNone, sluice::Compression::kZlib,
      sluice::Compression::kGzip};
  opts.compression = kCompressions[mode & 3];
  opts.buffer_size = (mode & 4) ? 16 : 4096;
  opts.allow_truncated_tail = (mode & 8) != 0;
  opts.verify_checksums = (mode & 16) == 0;
  opts.max_record_size = 1 << 20;

  auto reader = sluice::TFRecordReader::Open(sluice::NewMemoryFile("fuzz", bytes), opts);
  if (reader.ok()) {
    // A data CRC error moves past the record; any other error repeats.
    for (int i = 0; i < 100000; ++i) {
      const uint64_t before = reader->next_record_number();
      auto r = reader->Next();
      if (r.ok() && !r->has_value()) break;
      if (r.ok()) continue;
      // Corruption is DataLoss and names the file.
      if (r.status().code() != sluice::StatusCode::kDataLoss) __builtin_trap();
      if (r.status().message().find("fuzz") == std::string::npos) __builtin_trap();
      if (reader->next_record_number() == before) break;
    }
  }

  // The same bytes as index text.
  auto index = sluice::RecordIndex::Parse(bytes, "fuzz.idx");
  if (index.ok() && !index->empty()) {
    auto again = sluice::TFRecordReader::Open(sluice::NewMemoryFile("fuzz", bytes), opts);
    if (again.ok()) {
      const uint64_t n = mode % (index->size() + 1);
      if (again->Seek(*index, n).ok()) (void)again->Next();
    }
  }
  return 0;
}
