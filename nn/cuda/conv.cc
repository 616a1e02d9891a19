// GpuBackend's convolutions: Conv2DForward, Conv2DBackwardData and
// Conv2DBackwardFilter (NHWC activations, HWIO filters).
//
// On a GPU with cuDNN 9 (internal/cudnn_lib.h) the convolutions run there;
// otherwise, and on the host device, the naive kernels of
// internal/conv_kernels.h run: one thread per output element, float32 sums.
// cuDNN pads both sides of an image alike, so a convolution whose SAME
// padding is asymmetric (an even kernel, or a stride that does not divide
// the size: ResNet's stride-2 convolutions) runs on the input padded
// explicitly (zeros written into scratch) with no padding of its own, and
// its data gradient comes back through the padded shape and is cropped, as
// TensorFlow does. (The float32 path does so everywhere, so the host tests
// cover it; the bfloat16 path only where cuDNN may take it.) After cuDNN
// the bias is added by BiasAdd, and the bias gradient is always BiasGrad's
// (chunked partial sums, no atomics).
#include <fmt/format.h>

#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/conv_kernels.h"
#include "sluice/nn/cuda/internal/cudnn_lib.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/kit/conv_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::gpu::backend {

using nn::kit::ConvGeometry;

namespace {
// Whether cuDNN's bfloat16 path can take the call: on a GPU, every tensor
// bfloat16 (else float32 staging).
bool AllBf16(std::initializer_list<const DeviceTensor*> tensors) {
  for (const DeviceTensor* t : tensors) {
    if (t == nullptr || t->dtype() != DType::kBFloat16) return false;
  }
  return true;
}
const float* In(const void* p) { return static_cast<const float*>(p); }
const float* In(const DeviceTensor* t) { return t != nullptr ? In(t->raw_data()) : nullptr; }
float* Out(void* p) { return static_cast<float*>(p); }

// The same convolution over its input padded explicitly: no padding.
ConvGeometry Unpadded(ConvGeometry g) {
  g.in_h += g.pad_top + g.pad_bottom;
  g.in_w += g.pad_left + g.pad_right;
  g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = 0;
  return g;
}

// The image side (x or dx) of a convolution as the kernels see it: g and
// the tensor itself, or, when g pads asymmetrically, Unpadded(g) and a
// scratch image of the padded shape (`padded` holds it).
struct Image {
  ConvGeometry g;
  DeviceTensor padded;
};

Result<Image> ImageFor(GpuBackend& b, const ConvGeometry& g, DType dtype) {
  if (g.symmetric_padding()) return Image{g, DeviceTensor()};
  Image im{Unpadded(g), DeviceTensor()};
  SLUICE_ASSIGN_OR_RETURN(im.padded,
                          b.Scratch(dtype, Shape{g.batch, im.g.in_h, im.g.in_w, g.in_c}));
  return im;
}

gpu_backend_internal::PadNhwcArgs PadArgs(const ConvGeometry& g, const Image& im, const void* src,
                                          void* dst) {
  gpu_backend_internal::PadNhwcArgs a;
  a.batch = g.batch;
  a.h = g.in_h;
  a.w = g.in_w;
  a.c = g.in_c;
  a.padded_h = im.g.in_h;
  a.padded_w = im.g.in_w;
  a.pad_top = g.pad_top;
  a.pad_left = g.pad_left;
  a.elem_size = static_cast<int>(DTypeSize(im.padded.dtype()));
  a.src = src;
  a.dst = dst;
  return a;
}

// x as the kernels read it: x itself, or x padded into im.padded.
Result<const void*> PaddedInput(GpuBackend& b, const ConvGeometry& g, Image& im,
                                const DeviceTensor& x) {
  if (im.padded.empty()) return x.raw_data();
  const gpu_backend_internal::PadNhwcArgs a = PadArgs(g, im, x.raw_data(), im.padded.raw_data());
  SLUICE_RETURN_IF_ERROR(b.Launch(
      "Conv2D padding", [a](KernelTarget t) { return gpu_backend_internal::RunPadNhwc(a, t); }));
  return static_cast<const void*>(im.padded.raw_data());
}

// Writes dx from the padded gradient, when there is one.
Status CropGradient(GpuBackend& b, const ConvGeometry& g, const Image& im, DeviceTensor* dx) {
  if (im.padded.empty()) return Status::OK();
  const gpu_backend_internal::PadNhwcArgs a = PadArgs(g, im, im.padded.raw_data(), dx->raw_data());
  return b.Launch("Conv2D padding",
                  [a](KernelTarget t) { return gpu_backend_internal::RunCropNhwc(a, t); });
}
}  // namespace

Status GpuBackend::Conv2DForward(const DeviceTensor& x, const DeviceTensor& filter,
                                 const DeviceTensor* bias, const nn::Window2D& window,
                                 DeviceTensor* y) {
  if (nn::kit::AnyBFloat16({&x, &filter, bias, y})) {
    if (on_gpu() && AllBf16({&x, &filter, y}) &&
        (bias == nullptr || bias->dtype() == DType::kFloat32)) {
      SLUICE_ASSIGN_OR_RETURN(
          ConvGeometry g,
          nn::kit::CheckConv2DForward(nn_device_, x, filter, bias, window, y, DType::kBFloat16));
      if (y->num_elements() == 0) return Status::OK();
      SLUICE_ASSIGN_OR_RETURN(Image im, ImageFor(*this, g, DType::kBFloat16));
      SLUICE_ASSIGN_OR_RETURN(const void* in, PaddedInput(*this, g, im, x));
      SLUICE_ASSIGN_OR_RETURN(
          bool done, gpu_backend_internal::CudnnConv2DForward(*this, im.g, in, filter.raw_data(),
                                                              y->raw_data(), true));
      if (done) return bias != nullptr ? BiasAdd(*bias, y) : Status::OK();
    }
    return nn::kit::in_float32::Conv2DForward(*this, x, filter, bias, window, y);
  }
  constexpr std::string_view kMethod = "Conv2DForward";
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g,
                          nn::kit::CheckConv2DForward(nn_device_, x, filter, bias, window, y));
  if (y->num_elements() == 0) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(Image im, ImageFor(*this, g, DType::kFloat32));
  SLUICE_ASSIGN_OR_RETURN(const void* in, PaddedInput(*this, g, im, x));
  SLUICE_ASSIGN_OR_RETURN(bool done, gpu_backend_internal::CudnnConv2DForward(
                                         *this, im.g, In(in), In(&filter), Out(y->raw_data())));
  if (done) return bias != nullptr ? BiasAdd(*bias, y) : Status::OK();
  gpu_backend_internal::Conv2DForwardArgs a{gpu_backend_internal::ToWindowGeometry(im.g), In(in),
                                            In(&filter), In(bias), Out(y->raw_data())};
  return Launch(kMethod,
                [a](KernelTarget t) { return gpu_backend_internal::RunConv2DForward(a, t); });
}

Status GpuBackend::Conv2DBackwardData(const DeviceTensor& dy, const DeviceTensor& filter,
                                      const nn::Window2D& window, DeviceTensor* dx) {
  if (nn::kit::AnyBFloat16({&dy, &filter, dx})) {
    if (on_gpu() && AllBf16({&dy, &filter, dx})) {
      SLUICE_ASSIGN_OR_RETURN(
          ConvGeometry g,
          nn::kit::CheckConv2DBackwardData(nn_device_, dy, filter, window, dx, DType::kBFloat16));
      if (dx->num_elements() == 0) return Status::OK();
      SLUICE_ASSIGN_OR_RETURN(Image im, ImageFor(*this, g, DType::kBFloat16));
      void* out = im.padded.empty() ? dx->raw_data() : im.padded.raw_data();
      SLUICE_ASSIGN_OR_RETURN(
          bool done, gpu_backend_internal::CudnnConv2DBackwardData(*this, im.g, dy.raw_data(),
                                                                   filter.raw_data(), out, true));
      if (done) return CropGradient(*this, g, im, dx);
    }
    return nn::kit::in_float32::Conv2DBackwardData(*this, dy, filter, window, dx);
  }
  constexpr std::string_view kMethod = "Conv2DBackwardData";
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g,
                          nn::kit::CheckConv2DBackwardData(nn_device_, dy, filter, window, dx));
  if (dx->num_elements() == 0) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(Image im, ImageFor(*this, g, DType::kFloat32));
  float* out = Out(im.padded.empty() ? dx->raw_data() : im.padded.raw_data());
  SLUICE_ASSIGN_OR_RETURN(bool done, gpu_backend_internal::CudnnConv2DBackwardData(
                                         *this, im.g, In(&dy), In(&filter), out));
  if (!done) {
    gpu_backend_internal::Conv2DBackwardDataArgs a{gpu_backend_internal::ToWindowGeometry(im.g),
                                                   In(&dy), In(&filter), out};
    SLUICE_RETURN_IF_ERROR(Launch(kMethod, [a](KernelTarget t) {
      return gpu_backend_internal::RunConv2DBackwardData(a, t);
    }));
  }
  return CropGradient(*this, g, im, dx);
}

Status GpuBackend::Conv2DBackwardFilter(const DeviceTensor& x, const DeviceTensor& dy,
                                        const nn::Window2D& window, DeviceTensor* dfilter,
                                        DeviceTensor* dbias) {
  if (nn::kit::AnyBFloat16({&x, &dy, dfilter, dbias})) {
    if (on_gpu() && AllBf16({&x, &dy}) && dfilter != nullptr &&
        (dbias == nullptr || dbias->dtype() == DType::kFloat32)) {
      const bool dfilter_bf16 = IsBf16(*dfilter);
      SLUICE_ASSIGN_OR_RETURN(ConvGeometry g,
                              nn::kit::CheckConv2DBackwardFilter(
                                  nn_device_, x, dy, window, dfilter, dbias, DType::kBFloat16,
                                  dfilter_bf16 ? DType::kBFloat16 : DType::kFloat32));
      if (dfilter->num_elements() > 0) {
        SLUICE_ASSIGN_OR_RETURN(Image im, ImageFor(*this, g, DType::kBFloat16));
        SLUICE_ASSIGN_OR_RETURN(const void* in, PaddedInput(*this, g, im, x));
        SLUICE_ASSIGN_OR_RETURN(bool done, gpu_backend_internal::CudnnConv2DBackwardFilter(
                                               *this, im.g, in, dy.raw_data(), dfilter->raw_data(),
                                               true, dfilter_bf16));
        if (done) return dbias != nullptr ? BiasGrad(dy, 0.0f, dbias) : Status::OK();
      }
    }
    return nn::kit::in_float32::Conv2DBackwardFilter(*this, x, dy, window, dfilter, dbias);
  }
  constexpr std::string_view kMethod = "Conv2DBackwardFilter";
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g, nn::kit::CheckConv2DBackwardFilter(
                                              nn_device_, x, dy, window, dfilter, dbias));
  if (dbias != nullptr) SLUICE_RETURN_IF_ERROR(BiasGrad(dy, 0.0f, dbias));
  if (dfilter->num_elements() == 0) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(Image im, ImageFor(*this, g, DType::kFloat32));
  SLUICE_ASSIGN_OR_RETURN(const void* in, PaddedInput(*this, g, im, x));
  // An empty batch leaves cuDNN out: the kernel writes the zero sums.
  SLUICE_ASSIGN_OR_RETURN(bool done, gpu_backend_internal::CudnnConv2DBackwardFilter(
                                         *this, im.g, In(in), In(&dy), Out(dfilter->raw_data())));
  if (done) return Status::OK();
  gpu_backend_internal::Conv2DBackwardFilterArgs a{gpu_backend_internal::ToWindowGeometry(im.g),
                                                   In(in), In(&dy), Out(dfilter->raw_data())};
  return Launch(
      kMethod, [a](KernelTarget t) { return gpu_backend_internal::RunConv2DBackwardFilter(a, t); });
}

}  // namespace sluice::gpu::backend

namespace sluice::gpu {

std::string ConvAlgorithm::ToString() const {
  return fmt::format("{} {}{}: {} ({}, workspace {} bytes{})", op, geometry,
                     bfloat16 ? " bfloat16" : "", algorithm,
                     measured ? fmt::format("measured {:.3f} ms", time_ms) : "heuristic",
                     workspace_bytes, deterministic ? "" : ", non-deterministic");
}

Result<std::vector<ConvAlgorithm>> ConvAlgorithms(nn::Backend& backend) {
  auto* b = dynamic_cast<backend::GpuBackend*>(&backend);
  if (b == nullptr) {
    return Status::InvalidArgument("ConvAlgorithms: " + backend.name() +
                                   " is not a GPU backend (gpu::NewNnBackend)");
  }
  return gpu_backend_internal::CudnnAlgorithms(*b);
}

}  // namespace sluice::gpu
