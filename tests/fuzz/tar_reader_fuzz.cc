// libFuzzer target for the tar reader (headers, pax records, long names,
// WebDataset grouping) and the sample walker.
//
// The first input byte picks the options (compression, buffer size, sample
// and header limits); the rest is the file. Every outcome must be samples, a
// clean end, or a DataLoss naming the file: never a crash, a hang, or an
// allocation larger than the input or the limits justify. Each sample is
// walked again (ForEachTarMember) and must walk cleanly.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sluice/records/tar_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  sluice::TarReaderOptions opts;
  constexpr sluice::Compression kCompressions[] = {
      sluice::Compression::kAuto, sluice::Compression::kNone, sluice::Compression::kGzip,
      sluice::Compression::kZlib};
  opts.compression = kCompressions[mode & 3];
  opts.buffer_size = (mode & 4) ? 16 : 1 << 16;
  opts.max_sample_size = (mode & 8) ? 4096 : 1 << 24;
  opts.max_header_size = (mode & 16) ? 600 : 1 << 16;

  auto reader = sluice::TarReader::Open(sluice::NewMemoryFile("fuzz.tar", bytes), opts);
  if (!reader.ok()) return 0;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t before = (*reader)->next_record_number();
    auto r = (*reader)->Next();
    if (r.ok() && !r->has_value()) break;
    if (r.ok()) {
      const sluice::Record& rec = **r;
      const sluice::Status walked = sluice::ForEachTarMember(
          rec.data, rec.offset, "fuzz.tar", opts.max_header_size,
          [](const sluice::TarMember& m) {
            if (m.key.empty() && m.extension.empty()) return sluice::Status::Internal("empty");
            return sluice::Status::OK();
          });
      if (!walked.ok()) __builtin_trap();  // the reader checked it already
      continue;
    }
    if (r.status().code() != sluice::StatusCode::kDataLoss &&
        r.status().code() != sluice::StatusCode::kOutOfRange) {
      __builtin_trap();
    }
    if (r.status().message().find("fuzz.tar") == std::string::npos) __builtin_trap();
    if ((*reader)->next_record_number() == before) break;
  }
  return 0;
}
