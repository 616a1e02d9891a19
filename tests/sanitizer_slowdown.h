// kSanitizerSlowdown: how much slower code runs in this build's sanitizers;
// kUnderSanitizer: whether this is a sanitized build.
// Tests that assert a time bound the product promises (cancellation within
// 100 ms, AUTOTUNE within 3 s) multiply the bound by it: 1 in normal builds,
// where the bound is the promise itself; 10 under ASan or TSan, which run
// code 2-15x slower.
#ifndef SLUICE_TESTS_SANITIZER_SLOWDOWN_H_
#define SLUICE_TESTS_SANITIZER_SLOWDOWN_H_

namespace sluice::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr double kSanitizerSlowdown = 10;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr double kSanitizerSlowdown = 10;
#else
inline constexpr double kSanitizerSlowdown = 1;
#endif
#else
inline constexpr double kSanitizerSlowdown = 1;
#endif

// Memory bounds (peak RSS, an address-space limit) hold for the product, not
// for a sanitized build: ASan's shadow memory and quarantine add hundreds
// of MB. Tests that assert them check them only where this is false.
inline constexpr bool kUnderSanitizer = kSanitizerSlowdown > 1;

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SANITIZER_SLOWDOWN_H_
