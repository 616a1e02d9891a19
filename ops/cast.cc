// Cast, SaturateCast, ConvertImageDtype (declared in image_ops.h).
#include <string>
#include <type_traits>

#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/cast_value.h"
#include "sluice/ops/internal/image_dims.h"

namespace sluice::ops {
namespace {

using ops_internal::CastOne;
using ops_internal::SaturateOne;

template <bool kSaturate>
Status CastImpl(const Tensor& x, Tensor* out) {
  VisitDType(x.dtype(), [&](auto from) {
    using From = decltype(from);
    if constexpr (!std::is_same_v<From, std::string_view>) {
      VisitDType(out->dtype(), [&](auto to) {
        using To = decltype(to);
        if constexpr (!std::is_same_v<To, std::string_view>) {
          auto src = x.flat<From>();
          auto dst = out->flat<To>();
          for (size_t i = 0; i < src.size(); ++i) {
            dst[i] = kSaturate ? SaturateOne<To>(src[i]) : CastOne<To>(src[i]);
          }
        }
      });
    }
  });
  return Status::OK();
}

template <bool kSaturate>
Result<Tensor> CastTo(const Tensor& x, DType dtype, std::string_view op) {
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(x.dtype(), op));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(dtype, op));
  if (x.dtype() == dtype) return x;
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, x.shape()));
  SLUICE_RETURN_IF_ERROR(CastImpl<kSaturate>(x, &out));
  return out;
}

}  // namespace

Result<Tensor> Cast(const Tensor& x, DType dtype) { return CastTo<false>(x, dtype, "Cast"); }

Result<Tensor> SaturateCast(const Tensor& x, DType dtype) {
  return CastTo<true>(x, dtype, "SaturateCast");
}

Status CastInto(const Tensor& x, Tensor* out) {
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(x.dtype(), "CastInto"));
  if (out == nullptr) return Status::InvalidArgument("CastInto: output is null");
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(out->dtype(), "CastInto"));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckOutput(x, out, out->dtype(), x.shape(), "CastInto"));
  return CastImpl<false>(x, out);
}

}  // namespace sluice::ops
