// GpuBackend's convolutions: Conv2DForward, Conv2DBackwardData and
// Conv2DBackwardFilter (NHWC activations, HWIO filters).
//
// On a GPU with cuDNN 9 (internal/cudnn_lib.h) the convolutions run there
// when the padding is symmetric; otherwise, and on the host device, the
// naive kernels of internal/conv_kernels.h run: one thread per output
// element, float32 sums. After cuDNN the bias is added by BiasAdd, and the
// bias gradient is always BiasGrad's (chunked partial sums, no atomics).
#include "sluice/gpu/backend/gpu_backend.h"
#include "sluice/gpu/backend/internal/conv_kernels.h"
#include "sluice/gpu/backend/internal/cudnn_lib.h"
#include "sluice/nn/internal/conv_checks.h"
#include "sluice/nn/internal/float32_staging.h"

namespace sluice::gpu::backend {

using nn::internal::ConvGeometry;

namespace {
// Whether cuDNN's bfloat16 path can take the call: on a GPU, every tensor
// bfloat16 (else float32 staging).
bool AllBf16(std::initializer_list<const DeviceTensor*> tensors) {
  for (const DeviceTensor* t : tensors) {
    if (t == nullptr || t->dtype() != DType::kBFloat16) return false;
  }
  return true;
}
const float* In(const DeviceTensor& t) { return static_cast<const float*>(t.raw_data()); }
const float* In(const DeviceTensor* t) { return t != nullptr ? In(*t) : nullptr; }
float* Out(DeviceTensor* t) { return t != nullptr ? static_cast<float*>(t->raw_data()) : nullptr; }
}  // namespace

Status GpuBackend::Conv2DForward(const DeviceTensor& x, const DeviceTensor& filter,
                                 const DeviceTensor* bias, const nn::Window2D& window,
                                 DeviceTensor* y) {
  if (nn::internal::AnyBFloat16({&x, &filter, bias, y})) {
    if (AllBf16({&x, &filter, y}) && (bias == nullptr || bias->dtype() == DType::kFloat32)) {
      SLUICE_ASSIGN_OR_RETURN(
          ConvGeometry g, nn::internal::CheckConv2DForward(nn_device_, x, filter, bias, window, y,
                                                           DType::kBFloat16));
      if (y->num_elements() == 0) return Status::OK();
      SLUICE_ASSIGN_OR_RETURN(
          bool done, internal::CudnnConv2DForward(*this, g, x.raw_data(), filter.raw_data(),
                                                  y->raw_data(), true));
      if (done) return bias != nullptr ? BiasAdd(*bias, y) : Status::OK();
    }
    return nn::internal::in_float32::Conv2DForward(*this, x, filter, bias, window, y);
  }
  constexpr std::string_view kMethod = "Conv2DForward";
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g,
                          nn::internal::CheckConv2DForward(nn_device_, x, filter, bias, window, y));
  if (y->num_elements() == 0) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(bool done,
                          internal::CudnnConv2DForward(*this, g, In(x), In(filter), Out(y)));
  if (done) return bias != nullptr ? BiasAdd(*bias, y) : Status::OK();
  internal::Conv2DForwardArgs a{internal::ToWindowGeometry(g), In(x), In(filter), In(bias), Out(y)};
  return Launch(kMethod, [a](KernelTarget t) { return internal::RunConv2DForward(a, t); });
}

Status GpuBackend::Conv2DBackwardData(const DeviceTensor& dy, const DeviceTensor& filter,
                                      const nn::Window2D& window, DeviceTensor* dx) {
  if (nn::internal::AnyBFloat16({&dy, &filter, dx})) {
    if (AllBf16({&dy, &filter, dx})) {
      SLUICE_ASSIGN_OR_RETURN(
          ConvGeometry g, nn::internal::CheckConv2DBackwardData(nn_device_, dy, filter, window, dx,
                                                                DType::kBFloat16));
      if (dx->num_elements() == 0) return Status::OK();
      SLUICE_ASSIGN_OR_RETURN(
          bool done, internal::CudnnConv2DBackwardData(*this, g, dy.raw_data(), filter.raw_data(),
                                                       dx->raw_data(), true));
      if (done) return Status::OK();
    }
    return nn::internal::in_float32::Conv2DBackwardData(*this, dy, filter, window, dx);
  }
  constexpr std::string_view kMethod = "Conv2DBackwardData";
  SLUICE_ASSIGN_OR_RETURN(
      ConvGeometry g, nn::internal::CheckConv2DBackwardData(nn_device_, dy, filter, window, dx));
  if (dx->num_elements() == 0) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(bool done,
                          internal::CudnnConv2DBackwardData(*this, g, In(dy), In(filter), Out(dx)));
  if (done) return Status::OK();
  internal::Conv2DBackwardDataArgs a{internal::ToWindowGeometry(g), In(dy), In(filter), Out(dx)};
  return Launch(kMethod, [a](KernelTarget t) { return internal::RunConv2DBackwardData(a, t); });
}

Status GpuBackend::Conv2DBackwardFilter(const DeviceTensor& x, const DeviceTensor& dy,
                                        const nn::Window2D& window, DeviceTensor* dfilter,
                                        DeviceTensor* dbias) {
  if (nn::internal::AnyBFloat16({&x, &dy, dfilter, dbias})) {
    if (AllBf16({&x, &dy}) && dfilter != nullptr &&
        (dbias == nullptr || dbias->dtype() == DType::kFloat32)) {
      const bool dfilter_bf16 = dfilter->dtype() == DType::kBFloat16;
      SLUICE_ASSIGN_OR_RETURN(ConvGeometry g,
                              nn::internal::CheckConv2DBackwardFilter(
                                  nn_device_, x, dy, window, dfilter, dbias, DType::kBFloat16,
                                  dfilter_bf16 ? DType::kBFloat16 : DType::kFloat32));
      if (dfilter->num_elements() > 0) {
        SLUICE_ASSIGN_OR_RETURN(bool done, internal::CudnnConv2DBackwardFilter(
                                               *this, g, x.raw_data(), dy.raw_data(),
                                               dfilter->raw_data(), true, dfilter_bf16));
        if (done) return dbias != nullptr ? BiasGrad(dy, 0.0f, dbias) : Status::OK();
      }
    }
    return nn::internal::in_float32::Conv2DBackwardFilter(*this, x, dy, window, dfilter, dbias);
  }
  constexpr std::string_view kMethod = "Conv2DBackwardFilter";
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g, nn::internal::CheckConv2DBackwardFilter(
                                              nn_device_, x, dy, window, dfilter, dbias));
  if (dbias != nullptr) SLUICE_RETURN_IF_ERROR(BiasGrad(dy, 0.0f, dbias));
  if (dfilter->num_elements() == 0) return Status::OK();
  // An empty batch leaves cuDNN out: the kernel writes the zero sums.
  SLUICE_ASSIGN_OR_RETURN(
      bool done, internal::CudnnConv2DBackwardFilter(*this, g, In(x), In(dy), Out(dfilter)));
  if (done) return Status::OK();
  internal::Conv2DBackwardFilterArgs a{internal::ToWindowGeometry(g), In(x), In(dy), Out(dfilter)};
  return Launch(kMethod, [a](KernelTarget t) { return internal::RunConv2DBackwardFilter(a, t); });
}

}  // namespace sluice::gpu::backend
