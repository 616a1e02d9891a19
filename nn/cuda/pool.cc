// GpuBackend's pooling: Pool2DForward and Pool2DBackward (NHWC), on the
// kernels of internal/pool_kernels.cu (declared in conv_kernels.h), over
// float32 or bfloat16 tensors (mixed precision reads and writes bfloat16 as
// it is).
//
// Max pooling's workspace is int64 with y's shape: the flat index into x
// of each window's first maximum (row-major window order, as TensorFlow).
// Backward writes each dx element once (from its window when windows do
// not overlap, else gathered from the windows that contain it), so it
// needs no atomics and is deterministic. Average pooling needs no
// workspace (an empty uint8 one is returned, as the CPU backend does).
#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/conv_kernels.h"
#include "sluice/nn/kit/backend_checks.h"
#include "sluice/nn/kit/conv_checks.h"

namespace sluice::gpu::backend {

using nn::kit::ConvGeometry;

namespace {
gpu_backend_internal::PoolKind Kind(nn::PoolMode mode) {
  return mode == nn::PoolMode::kMax ? gpu_backend_internal::PoolKind::kMax
                                    : gpu_backend_internal::PoolKind::kAverage;
}
}  // namespace

Status GpuBackend::Pool2DForward(nn::PoolMode mode, const DeviceTensor& x,
                                 const nn::Window2D& window, DeviceTensor* y,
                                 DeviceTensor* workspace) {
  constexpr std::string_view kMethod = "Pool2DForward";
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g,
                          nn::kit::CheckPool2DForward(nn_device_, x, window, y, kFloatOrBf16));
  gpu_backend_internal::Pool2DForwardArgs a;
  a.g = gpu_backend_internal::ToWindowGeometry(g);
  a.kind = Kind(mode);
  a.x = x.raw_data();
  a.y = y->raw_data();
  a.x_bf16 = IsBf16(x);
  a.y_bf16 = IsBf16(*y);
  if (workspace != nullptr) {
    // Only max pooling needs one to go backward.
    if (mode == nn::PoolMode::kMax) {
      SLUICE_ASSIGN_OR_RETURN(*workspace, Allocate(DType::kInt64, y->shape()));
      a.argmax = static_cast<int64_t*>(workspace->raw_data());
    } else {
      SLUICE_ASSIGN_OR_RETURN(*workspace, Allocate(DType::kUInt8, Shape{0}));
    }
  }
  if (y->num_elements() == 0) return Status::OK();
  return Launch(kMethod,
                [a](KernelTarget t) { return gpu_backend_internal::RunPool2DForward(a, t); });
}

Status GpuBackend::Pool2DBackward(nn::PoolMode mode, const DeviceTensor& x, const DeviceTensor& y,
                                  const DeviceTensor& dy, const DeviceTensor& workspace,
                                  const nn::Window2D& window, DeviceTensor* dx) {
  constexpr std::string_view kMethod = "Pool2DBackward";
  SLUICE_ASSIGN_OR_RETURN(
      ConvGeometry g, nn::kit::CheckPool2DBackward(nn_device_, x, y, dy, window, dx, kFloatOrBf16));
  if (dx->num_elements() == 0) return Status::OK();
  gpu_backend_internal::Pool2DBackwardArgs a;
  a.g = gpu_backend_internal::ToWindowGeometry(g);
  a.kind = Kind(mode);
  a.dy = dy.raw_data();
  a.dx = dx->raw_data();
  a.dy_bf16 = IsBf16(dy);
  a.dx_bf16 = IsBf16(*dx);
  DeviceTensor ws = workspace;
  if (mode == nn::PoolMode::kMax) {
    if (ws.num_elements() == 0) {
      // No workspace from the forward call (it ran without one): make it
      // again from x.
      SLUICE_ASSIGN_OR_RETURN(DeviceTensor tmp_y, Scratch(DType::kFloat32, y.shape()));
      SLUICE_RETURN_IF_ERROR(Pool2DForward(mode, x, window, &tmp_y, &ws));
    }
    if (ws.device() != nn_device_ || ws.dtype() != DType::kInt64 || ws.shape() != y.shape() ||
        ws.empty()) {
      return nn::kit::Invalid(
          kMethod,
          "workspace is not the one Pool2DForward made for these shapes (want int64" +
              y.shape().ToString() + ")",
          {{"x", &x}, {"workspace", &workspace}});
    }
    a.argmax = static_cast<const int64_t*>(ws.raw_data());
  }
  // `ws` may be a scratch tensor dropped on return: the kernel is queued
  // on the stream first, which is all the allocator asks.
  return Launch(kMethod,
                [a](KernelTarget t) { return gpu_backend_internal::RunPool2DBackward(a, t); });
}

}  // namespace sluice::gpu::backend
