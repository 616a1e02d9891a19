// GpuBackend's elementwise methods: Fill, Cast, Axpby, Multiply and
// DropoutMask (kernels in internal/dense_elementwise_kernels.cu).
#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/dense_kernels.h"
#include "sluice/nn/kit/backend_checks.h"
#include "sluice/nn/kit/dense_checks.h"

namespace sluice::gpu::backend {
namespace {

// The kernels' element type of a numeric dtype (same numbering).
gpu_backend_internal::ElemType ElemTypeOf(DType dtype) {
  static_assert(static_cast<int>(gpu_backend_internal::ElemType::kBool) ==
                static_cast<int>(DType::kBool));
  static_assert(static_cast<int>(gpu_backend_internal::ElemType::kFloat64) ==
                static_cast<int>(DType::kFloat64));
  return static_cast<gpu_backend_internal::ElemType>(dtype);
}

}  // namespace

// Fill, Axpby, Multiply and the dropout masks read and write bfloat16
// tensors as they are (float32 staging's bits, one pass).
Status GpuBackend::Fill(float value, DeviceTensor* x) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckFill(device(), x, kFloatOrBf16));
  if (x->num_elements() == 0) return Status::OK();
  const gpu_backend_internal::FillArgs a{x->raw_data(), x->num_elements(), value, IsBf16(*x)};
  return Launch("Fill", [a](KernelTarget t) { return gpu_backend_internal::RunFill(a, t); });
}

Status GpuBackend::Cast(const DeviceTensor& x, float scale, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckCast(device(), x, y));
  if (x.num_elements() == 0) return Status::OK();
  const gpu_backend_internal::ScaledCastArgs a{x.raw_data(), ElemTypeOf(x.dtype()), y->raw_data(),
                                               IsBf16(*y),   x.num_elements(),      scale};
  return Launch("Cast", [a](KernelTarget t) { return gpu_backend_internal::RunScaledCast(a, t); });
}

Status GpuBackend::Axpby(float alpha, const DeviceTensor& x, float beta, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckAxpby(device(), x, y, kFloatOrBf16));
  if (x.num_elements() == 0) return Status::OK();
  const gpu_backend_internal::AxpbyArgs a{x.raw_data(), y->raw_data(), x.num_elements(), alpha,
                                          beta,         IsBf16(x),     IsBf16(*y)};
  return Launch("Axpby", [a](KernelTarget t) { return gpu_backend_internal::RunAxpby(a, t); });
}

Status GpuBackend::Multiply(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckMultiply(device(), a, b, y, kFloatOrBf16));
  if (a.num_elements() == 0) return Status::OK();
  const gpu_backend_internal::MultiplyArgs args{a.raw_data(),     b.raw_data(), y->raw_data(),
                                                a.num_elements(), IsBf16(a),    IsBf16(b),
                                                IsBf16(*y)};
  return Launch("Multiply",
                [args](KernelTarget t) { return gpu_backend_internal::RunMultiply(args, t); });
}

Status GpuBackend::DropoutMask(float rate, uint64_t seed, uint64_t stream, DeviceTensor* mask) {
  return Dropout(rate, seed, stream, nullptr, mask);
}

Status GpuBackend::DropoutMaskFromCounter(float rate, uint64_t seed,
                                          const DeviceTensor& stream_counter, DeviceTensor* mask) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckCounter("DropoutMask", device(), &stream_counter));
  return Dropout(rate, seed, 0, stream_counter.data<int64_t>(), mask);
}

Status GpuBackend::Dropout(float rate, uint64_t seed, uint64_t stream,
                           const int64_t* stream_counter, DeviceTensor* mask) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckDropoutMask(device(), rate, mask, kFloatOrBf16));
  if (mask->num_elements() == 0) return Status::OK();
  // The CPU backend's keep value, computed the same way (one float division).
  gpu_backend_internal::DropoutMaskArgs a;
  a.mask = mask->raw_data();
  a.mask_bf16 = IsBf16(*mask);
  a.count = mask->num_elements();
  a.rate = rate;
  a.keep = 1.0f / (1.0f - rate);
  a.seed = seed;
  a.stream = stream;
  a.stream_counter = stream_counter;
  return Launch("DropoutMask",
                [a](KernelTarget t) { return gpu_backend_internal::RunDropoutMask(a, t); });
}

}  // namespace sluice::gpu::backend
