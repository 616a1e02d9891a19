// CRC-32C (Castagnoli), as TFRecord uses it, and TensorFlow's masking.
//
// Uses the SSE4.2 crc32 instruction over three interleaved streams when the
// CPU has it (checked once at run time), else a portable table-driven
// version; both give identical results. Pure functions: thread-safe.
#ifndef SLUICE_RECORDS_CRC32C_H_
#define SLUICE_RECORDS_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::crc32c {

// CRC-32C of data[0, n) continuing from `crc`, the CRC of everything before
// it (0 for the start). Extend(Extend(0, a), b) == Value(a + b).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// TFRecord stores CRCs masked, so that a CRC of bytes that embed CRCs stays
// well-distributed: rotate right by 15 bits and add a constant.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline constexpr uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline constexpr uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

// The implementations, exposed for tests and benchmarks. ExtendHardware
// REQUIRES: HardwareAvailable().
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
bool HardwareAvailable();

}  // namespace sluice::crc32c

#endif  // SLUICE_RECORDS_CRC32C_H_
