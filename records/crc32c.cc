// Run-time choice between the SSE4.2 and the portable CRC-32C.
//
// The hardware version lives in internal/crc32c_sse42.cc, which is built
// with -msse4.2 -mpclmul and only on x86-64; elsewhere ExtendHardware is the
// portable version under another name.
#include "sluice/records/crc32c.h"

namespace sluice::crc32c {
namespace {

using ExtendFunction = uint32_t (*)(uint32_t, const void*, size_t);

ExtendFunction ChooseExtend() { return HardwareAvailable() ? ExtendHardware : ExtendPortable; }

}  // namespace

#if defined(__x86_64__)

bool HardwareAvailable() {
  // A function-local static: initialised once, thread-safely, on first use,
  // even when that use comes from another translation unit's static
  // initialiser.
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
  }();
  return available;
}

#else  // !defined(__x86_64__)

bool HardwareAvailable() { return false; }

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
  return ExtendPortable(crc, data, n);
}

#endif  // defined(__x86_64__)

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  static const ExtendFunction extend = ChooseExtend();
  return extend(crc, data, n);
}

}  // namespace sluice::crc32c
