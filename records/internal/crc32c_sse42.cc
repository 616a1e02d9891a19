// CRC-32C with the SSE4.2 crc32 instruction, over three interleaved streams.
//
// crc32 has a latency of 3 cycles and a throughput of one per cycle, so one
// dependent chain uses a third of the unit. Large inputs are therefore cut
// into three consecutive slices A|B|C of equal length L whose CRCs run side by
// side, and are then joined with
//
//   crc(A|B|C) = shift(crc_A, 2L) ^ shift(crc_B, L) ^ crc_C
//
// where crc_B and crc_C start from 0 and shift(r, N) is the register after N
// zero bytes, r * x^(8N) mod P. (Without the pre- and post-inversion the CRC
// register update is linear over GF(2).) The multiplication uses PCLMULQDQ,
// and the crc32 instruction itself does the reduction mod P: on a 64-bit word
// w it computes w(x) * x^32 mod P, and a carry-less product of two 32-bit
// reflected values is the product polynomial times x, so
//
//   crc32_u64(0, clmul(r, x^(8N-33) mod P)) == r * x^(8N) mod P.
//
// The x^k mod P constants are computed at compile time.
//
// This file is compiled with -msse4.2 -mpclmul: everything in it is internal
// and only runs once crc32c.cc has checked the CPU, so no SSE4.2 code can leak
// into a caller on an older CPU through a shared inline definition. On other
// targets (records/CMakeLists.txt leaves this file out there) crc32c.cc
// provides ExtendHardware instead.
#if defined(__x86_64__)

#include <nmmintrin.h>  // SSE4.2: _mm_crc32_*
#include <wmmintrin.h>  // PCLMULQDQ

#include <cstdint>
#include <cstring>

#include "sluice/records/crc32c.h"

namespace sluice::crc32c {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

// Bytes per stream in the main loop: three streams cover 12 KiB per block.
constexpr size_t kBlockStreamBytes = 4096;
constexpr size_t kBlockStreamWords = kBlockStreamBytes / 8;
// Below this many bytes the three-stream pass does not pay for its join.
constexpr size_t kMinThreeStreamBytes = 96;

// x^n mod P in reflected bit order (bit 31 is x^0, bit 0 is x^31).
constexpr uint32_t XPowMod(uint64_t n) {
  uint32_t v = 0x80000000u;  // x^0
  for (; n > 0; --n) v = (v >> 1) ^ ((v & 1u) ? kPolyReflected : 0u);
  return v;
}

// The multiplier that shifts a CRC register over `bytes` zero bytes through
// the clmul + crc32 reduction above. REQUIRES: bytes >= 5.
constexpr uint32_t ShiftConstant(uint64_t bytes) { return XPowMod(8 * bytes - 33); }

constexpr uint32_t kShiftBlock1 = ShiftConstant(1 * kBlockStreamBytes);
constexpr uint32_t kShiftBlock2 = ShiftConstant(2 * kBlockStreamBytes);
constexpr uint32_t kShiftBlock3 = ShiftConstant(3 * kBlockStreamBytes);

// For the last pass, whose stream length is any multiple of 8 below
// kBlockStreamBytes: word_shift[j] shifts over 8*j bytes, j < 2*kBlockStreamWords.
constexpr size_t kWordShiftCount = 2 * kBlockStreamWords;
struct WordShiftTable {
  uint32_t word_shift[kWordShiftCount];
};

constexpr WordShiftTable MakeWordShiftTable() {
  WordShiftTable table{};
  table.word_shift[0] = 0;  // unused: a stream is never empty
  uint32_t v = XPowMod(64 - 33);
  for (size_t j = 1; j < kWordShiftCount; ++j) {
    table.word_shift[j] = v;
    for (int bit = 0; bit < 64; ++bit) v = (v >> 1) ^ ((v & 1u) ? kPolyReflected : 0u);
  }
  return table;
}

constexpr WordShiftTable kWordShifts = MakeWordShiftTable();
static_assert(kWordShifts.word_shift[kBlockStreamWords] == kShiftBlock1);

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The 64-bit carry-less product of a CRC register and a shift constant; feed
// the XOR of such products to Reduce().
inline uint64_t MultiplyUnreduced(uint64_t crc, uint32_t constant) {
  const __m128i a = _mm_cvtsi64_si128(static_cast<long long>(crc));
  const __m128i b = _mm_cvtsi32_si128(static_cast<int>(constant));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_clmulepi64_si128(a, b, 0x00)));
}

inline uint64_t Reduce(uint64_t product) { return _mm_crc32_u64(0, product); }

// Runs three streams of `words` 64-bit words each, starting at p, p + 8*words
// and p + 16*words, continuing the registers a, b and c.
inline void ThreeStreams(const uint8_t* p, size_t words, uint64_t& a, uint64_t& b, uint64_t& c) {
  const uint8_t* pa = p;
  const uint8_t* pb = p + 8 * words;
  const uint8_t* pc = p + 16 * words;
  const uint8_t* const end = pb;
  while (pa != end) {
    a = _mm_crc32_u64(a, Load64(pa));
    b = _mm_crc32_u64(b, Load64(pb));
    c = _mm_crc32_u64(c, Load64(pc));
    pa += 8;
    pb += 8;
    pc += 8;
  }
}

// Fewer than 8 bytes, with at most three crc32 steps.
inline uint64_t SmallTail(uint64_t crc, const uint8_t* p, size_t n) {
  uint32_t r = static_cast<uint32_t>(crc);
  if (n & 4) {
    r = _mm_crc32_u32(r, Load32(p));
    p += 4;
  }
  if (n & 2) {
    r = _mm_crc32_u16(r, Load16(p));
    p += 2;
  }
  if (n & 1) r = _mm_crc32_u8(r, *p);
  return r;
}

}  // namespace

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t r = static_cast<uint32_t>(~crc);

  if (n >= kMinThreeStreamBytes) {
    if (n >= 3 * kBlockStreamBytes) {
      // Align to 8 bytes so that no word load of the bulk splits a cache
      // line. (Only here: for shorter inputs the extra steps on the critical
      // path cost more than the occasional split load.)
      const uintptr_t misalignment = reinterpret_cast<uintptr_t>(p) & 7u;
      if (misalignment != 0) {
        const size_t head = 8 - misalignment;
        r = SmallTail(r, p, head);
        p += head;
        n -= head;
      }
      // Whole blocks. Each block's streams start from zero, and the running
      // CRC is shifted past the block and folded in off the critical path,
      // so one block's join overlaps the next block's crc32 chains.
      while (n >= 3 * kBlockStreamBytes) {
        uint64_t a = 0, b = 0, c = 0;
        ThreeStreams(p, kBlockStreamWords, a, b, c);
        r = Reduce(MultiplyUnreduced(r, kShiftBlock3) ^ MultiplyUnreduced(a, kShiftBlock2) ^
                   MultiplyUnreduced(b, kShiftBlock1)) ^
            c;
        p += 3 * kBlockStreamBytes;
        n -= 3 * kBlockStreamBytes;
      }
    }
    // One more three-stream pass over as much of the rest as splits into
    // three equal runs of whole words; stream a continues from the CRC.
    if (n >= kMinThreeStreamBytes) {
      const size_t words = n / 24;  // < kBlockStreamWords
      uint64_t b = 0, c = 0;
      ThreeStreams(p, words, r, b, c);
      r = Reduce(MultiplyUnreduced(r, kWordShifts.word_shift[2 * words]) ^
                 MultiplyUnreduced(b, kWordShifts.word_shift[words])) ^
          c;
      p += 24 * words;
      n -= 24 * words;
    }
  }
  while (n >= 8) {
    r = _mm_crc32_u64(r, Load64(p));
    p += 8;
    n -= 8;
  }
  if (n > 0) r = SmallTail(r, p, n);
  return ~static_cast<uint32_t>(r);
}

}  // namespace sluice::crc32c

#endif  // defined(__x86_64__)
