// GpuBackend's elementwise methods: Fill, Cast, Axpby, Multiply and
// DropoutMask (kernels in internal/dense_elementwise_kernels.cu).
#include "sluice/gpu/backend/gpu_backend.h"
#include "sluice/gpu/backend/internal/dense_kernels.h"
#include "sluice/nn/internal/backend_checks.h"
#include "sluice/nn/internal/dense_checks.h"
#include "sluice/nn/internal/float32_staging.h"

namespace sluice::gpu::backend {
namespace {

// The kernels' element type of a numeric dtype (same numbering).
internal::ElemType ElemTypeOf(DType dtype) {
  static_assert(static_cast<int>(internal::ElemType::kBool) == static_cast<int>(DType::kBool));
  static_assert(static_cast<int>(internal::ElemType::kFloat64) ==
                static_cast<int>(DType::kFloat64));
  return static_cast<internal::ElemType>(dtype);
}

}  // namespace

Status GpuBackend::Fill(float value, DeviceTensor* x) {
  if (nn::internal::AnyBFloat16({x})) return nn::internal::in_float32::Fill(*this, value, x);
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckFill(device(), x));
  if (x->num_elements() == 0) return Status::OK();
  const internal::FillArgs a{x->data<float>(), x->num_elements(), value};
  return Launch("Fill", [a](KernelTarget t) { return internal::RunFill(a, t); });
}

Status GpuBackend::Cast(const DeviceTensor& x, float scale, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckCast(device(), x, y));
  if (x.num_elements() == 0) return Status::OK();
  const internal::ScaledCastArgs a{x.raw_data(),     ElemTypeOf(x.dtype()),
                                   y->raw_data(),    y->dtype() == DType::kBFloat16,
                                   x.num_elements(), scale};
  return Launch("Cast", [a](KernelTarget t) { return internal::RunScaledCast(a, t); });
}

Status GpuBackend::Axpby(float alpha, const DeviceTensor& x, float beta, DeviceTensor* y) {
  if (nn::internal::AnyBFloat16({&x, y}))
    return nn::internal::in_float32::Axpby(*this, alpha, x, beta, y);
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckAxpby(device(), x, y));
  if (x.num_elements() == 0) return Status::OK();
  const internal::AxpbyArgs a{x.data<float>(), y->data<float>(), x.num_elements(), alpha, beta};
  return Launch("Axpby", [a](KernelTarget t) { return internal::RunAxpby(a, t); });
}

Status GpuBackend::Multiply(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor* y) {
  if (nn::internal::AnyBFloat16({&a, &b, y}))
    return nn::internal::in_float32::Multiply(*this, a, b, y);
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckMultiply(device(), a, b, y));
  if (a.num_elements() == 0) return Status::OK();
  const internal::MultiplyArgs args{a.data<float>(), b.data<float>(), y->data<float>(),
                                    a.num_elements()};
  return Launch("Multiply", [args](KernelTarget t) { return internal::RunMultiply(args, t); });
}

Status GpuBackend::DropoutMask(float rate, uint64_t seed, uint64_t stream, DeviceTensor* mask) {
  if (nn::internal::AnyBFloat16({mask})) {
    return nn::internal::in_float32::DropoutMask(*this, rate, seed, stream, nullptr, mask);
  }
  return Dropout(rate, seed, stream, nullptr, mask);
}

Status GpuBackend::DropoutMaskFromCounter(float rate, uint64_t seed,
                                          const DeviceTensor& stream_counter, DeviceTensor* mask) {
  if (nn::internal::AnyBFloat16({mask})) {
    return nn::internal::in_float32::DropoutMask(*this, rate, seed, 0, &stream_counter, mask);
  }
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckCounter("DropoutMask", device(), &stream_counter));
  return Dropout(rate, seed, 0, stream_counter.data<int64_t>(), mask);
}

Status GpuBackend::Dropout(float rate, uint64_t seed, uint64_t stream,
                           const int64_t* stream_counter, DeviceTensor* mask) {
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckDropoutMask(device(), rate, mask));
  if (mask->num_elements() == 0) return Status::OK();
  // The CPU backend's keep value, computed the same way (one float division).
  const internal::DropoutMaskArgs a{
      mask->data<float>(), mask->num_elements(), rate, 1.0f / (1.0f - rate), seed, stream,
      stream_counter};
  return Launch("DropoutMask", [a](KernelTarget t) { return internal::RunDropoutMask(a, t); });
}

}  // namespace sluice::gpu::backend
