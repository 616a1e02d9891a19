// CRC-32C throughput: the dispatching Extend, both implementations, and
// memcpy over the same sizes as the physical reference (compare bytes_per_second
// of BM_Crc32c* with BM_Memcpy at the same size).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "sluice/records/crc32c.h"

namespace sluice {
namespace {

using ExtendFunction = uint32_t (*)(uint32_t, const void*, size_t);

std::vector<uint8_t> MakeInput(size_t n) {
  std::vector<uint8_t> bytes(n);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  return bytes;
}

void RunCrc(benchmark::State& state, ExtendFunction extend) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<uint8_t> data = MakeInput(n);
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = extend(crc, data.data(), n);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Crc32c(benchmark::State& state) { RunCrc(state, crc32c::Extend); }

void BM_Crc32cPortable(benchmark::State& state) { RunCrc(state, crc32c::ExtendPortable); }

void BM_Crc32cHardware(benchmark::State& state) {
  if (!crc32c::HardwareAvailable()) {
    state.SkipWithError("CPU lacks SSE4.2 / PCLMULQDQ");
    return;
  }
  RunCrc(state, crc32c::ExtendHardware);
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<uint8_t> src = MakeInput(n);
  std::vector<uint8_t> dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

// A TFRecord header, a small record, then sizes from L1 to beyond the caches.
void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {12, 100, 1 << 10, 64 << 10, 1 << 20, 16 << 20}) b->Arg(n);
}

BENCHMARK(BM_Memcpy)->Apply(Sizes);
BENCHMARK(BM_Crc32c)->Apply(Sizes);
BENCHMARK(BM_Crc32cHardware)->Apply(Sizes);
BENCHMARK(BM_Crc32cPortable)->Apply(Sizes);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
