// The cast element loop (image_kernels.h): ops_internal::CastOne's
// conversions (ops/internal/cast_value.h) as __host__ __device__ code, for
// every pair of numeric dtypes.
#include <cstdint>
#include <type_traits>

#include "sluice/ops/cuda/internal/image_kernels.h"
#include "sluice/device/cuda/kernel_util.cuh"

namespace sluice::gpu_internal {
namespace {

// bool travels as this type (one byte, 0 or 1), to tell it from uint8_t.
struct Bool {
  uint8_t v;
};

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                          std::is_same_v<T, Half> || std::is_same_v<T, BFloat>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T>;

template <typename T>
SLUICE_HD double ToDouble(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat>) {
    return static_cast<double>(ToFloat(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename To>
SLUICE_HD To FromFloat(float f) {
  if constexpr (std::is_same_v<To, Half>) {
    return FloatToHalf(f);
  } else if constexpr (std::is_same_v<To, BFloat>) {
    return FloatToBFloat(f);
  } else {
    return static_cast<To>(f);
  }
}

// A double to a floating type; to 16 bits through float, as Eigen.
template <typename To>
SLUICE_HD To FromDouble(double d) {
  if constexpr (std::is_same_v<To, double>) {
    return d;
  } else {
    return FromFloat<To>(static_cast<float>(d));
  }
}

// x86-64's cvttsd2si: out of range or NaN gives the type's minimum.
SLUICE_HD int32_t TruncToInt32(double d) {
  if (d > -2147483649.0 && d < 2147483648.0) return static_cast<int32_t>(d);
  return INT32_MIN;
}
SLUICE_HD int64_t TruncToInt64(double d) {
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<int64_t>(d);
  return INT64_MIN;
}

template <typename To, typename From>
SLUICE_HD To CastOne(From v) {
  if constexpr (std::is_same_v<To, Bool>) {
    if constexpr (std::is_same_v<From, Bool>)
      return v;
    else if constexpr (kIsFloat<From>)
      return Bool{static_cast<uint8_t>(ToDouble(v) != 0.0)};
    else
      return Bool{static_cast<uint8_t>(v != 0)};
  } else if constexpr (std::is_same_v<From, Bool>) {
    if constexpr (kIsFloat<To>)
      return FromDouble<To>(v.v ? 1.0 : 0.0);
    else
      return static_cast<To>(v.v ? 1 : 0);
  } else if constexpr (kIsFloat<To>) {
    if constexpr (kIsInt<From> && (std::is_same_v<To, float> || std::is_same_v<To, double>))
      return static_cast<To>(v);  // rounds to nearest
    else if constexpr (kIsInt<From>)
      return FromFloat<To>(static_cast<float>(v));
    else
      return FromDouble<To>(ToDouble(v));
  } else if constexpr (kIsFloat<From>) {  // float -> integer
    const double d = ToDouble(v);
    if constexpr (std::is_same_v<To, int64_t>) {
      return TruncToInt64(d);
    } else if constexpr (std::is_same_v<To, int32_t>) {
      return TruncToInt32(d);
    } else {  // uint8: the int32 result, saturated
      const int32_t i = TruncToInt32(d);
      return static_cast<To>(i < 0 ? 0 : (i > 255 ? 255 : i));
    }
  } else {  // integer -> integer: two's complement wrap
    return static_cast<To>(static_cast<std::make_unsigned_t<From>>(v));
  }
}

template <typename To, typename From>
int Cast(const CastArgs& a, KernelTarget target) {
  const auto* in = static_cast<const From*>(a.in);
  auto* out = static_cast<To*>(a.out);
  return ForEach(a.count, target,
                 [=] __host__ __device__(int64_t i) { out[i] = CastOne<To>(in[i]); });
}

template <typename Fn>
int VisitCastType(ElemType type, Fn&& fn) {
  if (type == ElemType::kBool) return fn(Bool{});
  return VisitElemType(type, fn);
}

}  // namespace

int RunCast(const CastArgs& a, KernelTarget target) {
  return VisitCastType(a.from, [&](auto from) {
    return VisitCastType(a.to, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      if constexpr (std::is_same_v<From, To>) {
        return static_cast<int>(cudaErrorInvalidValue);  // REQUIRES from != to
      } else {
        return Cast<To, From>(a, target);
      }
    });
  });
}

}  // namespace sluice::gpu_internal
