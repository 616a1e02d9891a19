// ConvertImageDtype (declared in image_ops.h): tf.image.convert_image_dtype.
#include <limits>
#include <string>
#include <type_traits>

#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/cast_value.h"
#include "sluice/ops/internal/simd.h"

namespace sluice::ops {
namespace {

using ops_internal::CastOne;
using ops_internal::FloatTo;
using ops_internal::kIsFloat;
using ops_internal::kIsInt;
using ops_internal::SaturateOne;

// a * b in T's arithmetic (16-bit floats: in float, rounded once).
template <typename T>
T Mul(T a, T b) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return T(static_cast<float>(a) * static_cast<float>(b));
  } else {
    return a * b;
  }
}

template <typename To, typename From>
To Convert(From v, bool saturate) {
  auto cast = [&](auto x) { return saturate ? SaturateOne<To>(x) : CastOne<To>(x); };
  if constexpr (kIsFloat<From> && kIsFloat<To>) {
    return CastOne<To>(v);
  } else if constexpr (kIsInt<From> && kIsFloat<To>) {
    // Cast, then times 1 / MAX (a double, rounded to To).
    const To scale = FloatTo<To>(1.0 / static_cast<double>(std::numeric_limits<From>::max()));
    return Mul<To>(CastOne<To>(v), scale);
  } else if constexpr (kIsFloat<From> && kIsInt<To>) {
    // Times MAX + 0.5 (a double, rounded to From), then cast.
    const From scale = FloatTo<From>(static_cast<double>(std::numeric_limits<To>::max()) + 0.5);
    return cast(Mul<From>(v, scale));
  } else {
    // Integers: MAX + 1 is a power of two for uint8, int32, int64.
    constexpr int in_bits = std::numeric_limits<From>::digits;
    constexpr int out_bits = std::numeric_limits<To>::digits;
    if constexpr (in_bits > out_bits) {
      return cast(static_cast<From>(v >> (in_bits - out_bits)));  // floor division
    } else {
      using U = std::make_unsigned_t<To>;
      return static_cast<To>(static_cast<U>(cast(v)) << (out_bits - in_bits));
    }
  }
}

bool Supported(DType d) { return d != DType::kBool && d != DType::kString; }

}  // namespace

Result<Tensor> ConvertImageDtype(const Tensor& image, DType dtype, bool saturate) {
  if (!Supported(image.dtype()) || !Supported(dtype)) {
    return Status::InvalidArgument(
        "ConvertImageDtype: dtypes must be integer or floating point, got " +
        std::string(DTypeName(image.dtype())) + " to " + std::string(DTypeName(dtype)));
  }
  if (image.dtype() == dtype) return image;
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, image.shape()));
  VisitDType(image.dtype(), [&](auto from) {
    using From = decltype(from);
    if constexpr (kIsFloat<From> || kIsInt<From>) {
      VisitDType(dtype, [&](auto to) {
        using To = decltype(to);
        if constexpr (kIsFloat<To> || kIsInt<To>) {
          auto src = image.flat<From>();
          auto dst = out.flat<To>();
          size_t i = 0;
          if constexpr (std::is_same_v<From, uint8_t> && std::is_same_v<To, float>) {
            // The common case, four lanes at a time (same arithmetic).
            const ops_internal::F4 scale = ops_internal::Splat(Convert<float>(uint8_t{1}, false));
            for (; i + 4 <= src.size(); i += 4) {
              ops_internal::StoreF4(&dst[i], ops_internal::Load4AsF4(&src[i]) * scale);
            }
          }
          for (; i < src.size(); ++i) dst[i] = Convert<To>(src[i], saturate);
        }
      });
    }
  });
  return out;
}

}  // namespace sluice::ops
