// Portable CRC-32C: slicing-by-8 over tables built at compile time.
//
// Bit order is the reflected one CRC-32C is defined with: bit 0 of the CRC
// register holds the coefficient of x^31 and bit 31 that of x^0, so feeding a
// bit in shifts right. Table k maps a byte to the register change it causes
// when it is followed by k zero bytes; eight lookups then advance the CRC over
// a whole 64-bit word at once.
#include <bit>
#include <cstdint>
#include <cstring>

#include "sluice/records/crc32c.h"

namespace sluice::crc32c {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

struct SliceTables {
  uint32_t t[8][256];
};

constexpr SliceTables MakeSliceTables() {
  SliceTables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ ((r & 1u) ? kPolyReflected : 0u);
    tables.t[0][b] = r;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t prev = tables.t[k - 1][b];
      tables.t[k][b] = (prev >> 8) ^ tables.t[0][prev & 0xffu];
    }
  }
  return tables;
}

constexpr SliceTables kTables = MakeSliceTables();

// Spot checks that the generator is right: the well-known first entries of
// the CRC-32C byte table.
static_assert(kTables.t[0][1] == 0xF26B8303u);
static_assert(kTables.t[0][128] == kPolyReflected);

inline uint64_t LoadLittleEndian64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

inline uint32_t StepByte(uint32_t crc, uint8_t byte) {
  return kTables.t[0][(crc ^ byte) & 0xffu] ^ (crc >> 8);
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t r = ~crc;
  // Byte steps up to an 8-byte boundary, so that word loads are aligned on
  // CPUs where that matters.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    r = StepByte(r, *p++);
    --n;
  }
  const auto& t = kTables.t;
  while (n >= 8) {
    const uint64_t v = LoadLittleEndian64(p) ^ r;
    r = t[7][v & 0xffu] ^ t[6][(v >> 8) & 0xffu] ^ t[5][(v >> 16) & 0xffu] ^
        t[4][(v >> 24) & 0xffu] ^ t[3][(v >> 32) & 0xffu] ^ t[2][(v >> 40) & 0xffu] ^
        t[1][(v >> 48) & 0xffu] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    r = StepByte(r, *p++);
    --n;
  }
  return ~r;
}

}  // namespace sluice::crc32c
