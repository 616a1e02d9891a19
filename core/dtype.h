// DType: the element type of a Tensor.
//
// Names follow tf.dtypes ("float32", "int64", "string", ...). A string
// element is a std::string_view into bytes the tensor keeps alive (see
// tensor.h). Plain enum; thread-safe.
#ifndef SLUICE_CORE_DTYPE_H_
#define SLUICE_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sluice/core/float16.h"
#include "sluice/core/result.h"

namespace sluice {

enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kString,
};

inline constexpr int kNumDTypes = 9;

// float16, bfloat16, float32 or float64 (tf.DType.is_floating).
constexpr bool IsFloatDType(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64;
}

// Bytes per element; sizeof(std::string_view) for kString.
size_t DTypeSize(DType dtype);
// tf.dtypes name: "bool", "uint8", "int32", "int64", "float16", "bfloat16",
// "float32", "float64", "string".
std::string_view DTypeName(DType dtype);
// Inverse of DTypeName; also accepts TensorFlow's C++ aliases "half", "float"
// and "double". InvalidArgument for anything else.
Result<DType> DTypeFromName(std::string_view name);

// The C++ type stored for each DType, and back.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<float16> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<bfloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<std::string_view> {
  static constexpr DType value = DType::kString;
};

template <typename T>
inline constexpr DType kDTypeOf = DTypeOf<T>::value;

// Calls fn(T{}) with the C++ type of `dtype`. Handy for type-generic kernels.
template <typename Fn>
decltype(auto) VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kBool: return fn(bool{});
    case DType::kUInt8: return fn(uint8_t{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kFloat16: return fn(float16{});
    case DType::kBFloat16: return fn(bfloat16{});
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: return fn(double{});
    case DType::kString: break;
  }
  return fn(std::string_view{});
}

}  // namespace sluice

#endif  // SLUICE_CORE_DTYPE_H_
