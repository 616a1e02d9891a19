// libFuzzer target for the tensor bundle reader (and its SSTable parser).
//
// The input is split at its first byte: that many bytes (times 16) form the
// data file, the rest the `.index` table. Every outcome must be tensors or an
// error Status: never a crash, a hang, or an allocation larger than the
// input can justify. Seed with tests/data/checkpoint/golden.index.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sluice/records/tensor_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t data_size = std::min<size_t>(size_t{data[0]} * 16, size - 1);
  const char* p = reinterpret_cast<const char*>(data + 1);
  std::string data_file(p, data_size);
  std::string index_file(p + data_size, size - 1 - data_size);
  auto reader = sluice::BundleReader::Open(sluice::NewMemoryFile("fuzz.index", index_file),
                                           sluice::NewMemoryFile("fuzz.data", data_file));
  if (!reader.ok()) return 0;
  for (const std::string& key : reader->Keys()) {
    (void)reader->Entry(key);
    (void)reader->Lookup(key);
  }
  return 0;
}
