// Element conversions behind ops::Cast, SaturateCast and
// ConvertImageDtype: one value of a numeric dtype to another, with
// TensorFlow's results on x86-64 for out-of-range floats (see Cast in
// image_ops.h) but no C++ undefined behaviour. Internal; header-only
// templates, thread-safe.
#ifndef SLUICE_OPS_INTERNAL_CAST_VALUE_H_
#define SLUICE_OPS_INTERNAL_CAST_VALUE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "sluice/core/float16.h"

namespace sluice::ops_internal {

template <typename T>
constexpr bool kIsFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Value as double (float16/bfloat16 through float: exact).
template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

// A float value to a floating type; double -> 16-bit goes through float, as
// Eigen does.
template <typename To>
To FloatTo(double d) {
  if constexpr (std::is_same_v<To, double>) {
    return d;
  } else {
    return To(static_cast<float>(d));
  }
}

// x86-64's truncating conversion (cvttsd2si): out of range or NaN gives the
// "integer indefinite" value, the type's minimum. What TF's Cast produces.
inline int32_t TruncToInt32(double d) {
  if (d > -2147483649.0 && d < 2147483648.0) return static_cast<int32_t>(d);
  return std::numeric_limits<int32_t>::min();
}
inline int64_t TruncToInt64(double d) {
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<int64_t>(d);
  return std::numeric_limits<int64_t>::min();
}

template <typename To, typename From>
To CastOne(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsFloat<From>)
      return ToDouble(v) != 0.0;
    else
      return v != 0;
  } else if constexpr (std::is_same_v<From, bool>) {
    if constexpr (kIsFloat<To>)
      return FloatTo<To>(v ? 1.0 : 0.0);
    else
      return static_cast<To>(v ? 1 : 0);
  } else if constexpr (kIsFloat<To>) {
    if constexpr (kIsInt<From> && (std::is_same_v<To, float> || std::is_same_v<To, double>))
      return static_cast<To>(v);  // rounds to nearest
    else if constexpr (kIsInt<From>)
      return To(static_cast<float>(v));  // 16-bit floats: through float, as Eigen
    else
      return FloatTo<To>(ToDouble(v));
  } else if constexpr (kIsFloat<From>) {  // float -> integer
    const double d = ToDouble(v);
    if constexpr (std::is_same_v<To, int64_t>)
      return TruncToInt64(d);
    else if constexpr (std::is_same_v<To, int32_t>)
      return TruncToInt32(d);
    // Narrower: TF's vectorized CPU kernel packs the int32 result with
    // saturation (its scalar path, used for a tensor's last few elements,
    // wraps instead; sluice is consistent).
    else
      return static_cast<To>(std::clamp<int32_t>(TruncToInt32(d), std::numeric_limits<To>::min(),
                                                 std::numeric_limits<To>::max()));
  } else {  // integer -> integer: two's complement wrap
    return static_cast<To>(static_cast<std::make_unsigned_t<From>>(v));
  }
}

template <typename To>
To SaturateFromDouble(double d) {
  if constexpr (kIsInt<To>) {
    if (std::isnan(d)) return To{0};
    if (d <= static_cast<double>(std::numeric_limits<To>::min()))
      return std::numeric_limits<To>::min();
    if (d >= static_cast<double>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return To{};  // unused
  }
}

template <typename To, typename From>
To SaturateOne(From v) {
  if constexpr (std::is_same_v<To, bool> || std::is_same_v<From, bool> ||
                std::is_same_v<To, From>) {
    return CastOne<To>(v);
  } else if constexpr (kIsInt<To>) {
    if constexpr (kIsInt<From>) {
      using Wide = std::conditional_t<std::is_signed_v<From>, int64_t, uint64_t>;
      const Wide lo = static_cast<Wide>(std::numeric_limits<To>::min());
      const Wide hi = static_cast<Wide>(std::numeric_limits<To>::max());
      const Wide w = static_cast<Wide>(v);
      if (std::is_signed_v<From> && w < lo) return std::numeric_limits<To>::min();
      if (w > hi) return std::numeric_limits<To>::max();
      return static_cast<To>(v);
    } else {
      return SaturateFromDouble<To>(ToDouble(v));
    }
  } else {  // to a float type: clamp to its finite range (NaN stays NaN)
    const double max =
        static_cast<double>(std::is_same_v<To, float16>    ? 65504.0f
                            : std::is_same_v<To, bfloat16> ? 3.38953139e38f
                            : std::is_same_v<To, float>    ? std::numeric_limits<float>::max()
                                                           : std::numeric_limits<double>::max());
    const double d = kIsInt<From> ? static_cast<double>(static_cast<float>(v)) : ToDouble(v);
    if (d > max) return FloatTo<To>(max);
    if (d < -max) return FloatTo<To>(-max);
    return CastOne<To>(v);
  }
}

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_CAST_VALUE_H_
