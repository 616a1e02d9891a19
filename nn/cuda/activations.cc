// GpuBackend::ActivationForward / ActivationBackward: the checks of
// nn/kit/train_checks.h, then one element loop (one row loop for
// softmax) of internal/train_kernels.h, over float32 or bfloat16 tensors.
#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/train_kernels.h"
#include "sluice/nn/kit/train_checks.h"

namespace sluice::gpu::backend {
namespace {

using gpu_backend_internal::ActivationKind;

static_assert(static_cast<int>(ActivationKind::kLinear) ==
              static_cast<int>(nn::Activation::kLinear));
static_assert(static_cast<int>(ActivationKind::kRelu) == static_cast<int>(nn::Activation::kRelu));
static_assert(static_cast<int>(ActivationKind::kSigmoid) ==
              static_cast<int>(nn::Activation::kSigmoid));
static_assert(static_cast<int>(ActivationKind::kTanh) == static_cast<int>(nn::Activation::kTanh));
static_assert(static_cast<int>(ActivationKind::kSoftmax) ==
              static_cast<int>(nn::Activation::kSoftmax));

// The length of the rows softmax works on (the last dimension); 1 for the
// elementwise functions.
int64_t RowLength(nn::Activation f, const DeviceTensor& t) {
  return f == nn::Activation::kSoftmax ? t.dim(t.rank() - 1) : 1;
}

}  // namespace

// float32 or bfloat16 tensors, read and written as they are (one pass,
// float arithmetic, the bits of float32 staging).
Status GpuBackend::ActivationForward(nn::Activation f, const DeviceTensor& x, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckActivationForward(device(), f, x, y, kFloatOrBf16));
  gpu_backend_internal::ActivationForwardArgs a;
  a.f = static_cast<ActivationKind>(f);
  a.x = x.raw_data();
  a.y = y->raw_data();
  a.x_bf16 = IsBf16(x);
  a.y_bf16 = IsBf16(*y);
  a.count = x.num_elements();
  a.row = RowLength(f, x);
  if (a.count == 0) return Status::OK();  // also softmax over rows of 0
  return Launch("ActivationForward",
                [a](KernelTarget t) { return gpu_backend_internal::RunActivationForward(a, t); });
}

Status GpuBackend::ActivationBackward(nn::Activation f, const DeviceTensor& y,
                                      const DeviceTensor& dy, DeviceTensor* dx) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckActivationBackward(device(), f, y, dy, dx, kFloatOrBf16));
  gpu_backend_internal::ActivationBackwardArgs a;
  a.f = static_cast<ActivationKind>(f);
  a.y = y.raw_data();
  a.dy = dy.raw_data();
  a.dx = dx->raw_data();
  a.y_bf16 = IsBf16(y);
  a.dy_bf16 = IsBf16(dy);
  a.dx_bf16 = IsBf16(*dx);
  a.count = y.num_elements();
  a.row = RowLength(f, y);
  if (a.count == 0) return Status::OK();
  return Launch("ActivationBackward",
                [a](KernelTarget t) { return gpu_backend_internal::RunActivationBackward(a, t); });
}

}  // namespace sluice::gpu::backend
