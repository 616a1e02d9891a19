#include "sluice/ops/cuda/image_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/device/cuda/launch.h"
#include "sluice/ops/cuda/internal/image_kernels.h"
#include "sluice/ops/internal/image_dims.h"

namespace sluice::gpu {
namespace {

using gpu_internal::ElemType;
using gpu_internal::ImageGeometry;
using gpu_internal::KernelTarget;
using ops_internal::ImageDims;

static_assert(static_cast<int>(ElemType::kBool) == static_cast<int>(DType::kBool) &&
              static_cast<int>(ElemType::kUInt8) == static_cast<int>(DType::kUInt8) &&
              static_cast<int>(ElemType::kInt32) == static_cast<int>(DType::kInt32) &&
              static_cast<int>(ElemType::kInt64) == static_cast<int>(DType::kInt64) &&
              static_cast<int>(ElemType::kFloat16) == static_cast<int>(DType::kFloat16) &&
              static_cast<int>(ElemType::kBFloat16) == static_cast<int>(DType::kBFloat16) &&
              static_cast<int>(ElemType::kFloat32) == static_cast<int>(DType::kFloat32) &&
              static_cast<int>(ElemType::kFloat64) == static_cast<int>(DType::kFloat64));

ElemType ToElem(DType dtype) { return static_cast<ElemType>(dtype); }

ImageGeometry Geometry(const ImageDims& d) {
  return ImageGeometry{d.batch, d.height, d.width, d.channels};
}

Status CheckStream(const DeviceTensor& t, const Stream& stream, std::string_view op) {
  if (t.device() == stream.device()) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("gpu::{}: the tensor {} is not on the stream's device {}", op, t.DebugString(),
                  stream.device().ToString()));
}

template <typename Run>
Status Enqueue(Stream& stream, std::string_view op, Run run) {
  return gpu_internal::Enqueue(stream, fmt::format("gpu::{} kernel", op), std::move(run));
}

Result<DeviceTensor> NewOutput(const Stream& stream, DType dtype, const Shape& shape) {
  return AllocateDeviceTensor(stream.device(), dtype, shape, &stream);
}

// OK if `out` is a tensor of `dtype` and `shape` on the stream's device:
// what an *Into form writes.
Status CheckOutput(const DeviceTensor* out, DType dtype, const Shape& shape, const Stream& stream,
                   std::string_view op) {
  if (out == nullptr) return Status::InvalidArgument(fmt::format("gpu::{}: out is null", op));
  if (out->device() == stream.device() && out->dtype() == dtype && out->shape() == shape) {
    return Status::OK();
  }
  return Status::InvalidArgument(fmt::format("gpu::{}: out is {}, expected {} {}{}", op,
                                             out->DebugString(), stream.device().ToString(),
                                             DTypeName(dtype), shape.ToString()));
}

Result<ImageDims> CheckImage(const DeviceTensor& image, const Stream& stream, std::string_view op) {
  SLUICE_RETURN_IF_ERROR(CheckStream(image, stream, op));
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, ops_internal::GetImageDims(image.shape(), op));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(image.dtype(), op));
  return d;
}

// Flips the images whose entry of `flip` is true (all of them when it is
// empty) into `out`.
Status FlipImagesInto(const DeviceTensor& image, const ImageDims& d, bool up_down,
                      const std::vector<bool>& flip, DeviceTensor& out, Stream& stream,
                      std::string_view op) {
  const int64_t image_bytes =
      d.height * d.width * d.channels * static_cast<int64_t>(DTypeSize(image.dtype()));
  for (int64_t first = 0; first < d.batch; first += gpu_internal::kMaxFlipImages) {
    gpu_internal::FlipArgs a;
    a.in = static_cast<const char*>(image.raw_data()) + first * image_bytes;
    a.out = static_cast<char*>(out.raw_data()) + first * image_bytes;
    a.elem_size = static_cast<int>(DTypeSize(image.dtype()));
    a.geometry = Geometry(d);
    a.geometry.batch = std::min(gpu_internal::kMaxFlipImages, d.batch - first);
    a.up_down = up_down;
    for (int64_t b = 0; b < a.geometry.batch; ++b) {
      if (flip.empty() || flip[first + b]) a.flip[b / 32] |= 1u << (b % 32);
    }
    SLUICE_RETURN_IF_ERROR(Enqueue(stream, op, [a](KernelTarget t) { return RunFlip(a, t); }));
  }
  return Status::OK();
}

Result<DeviceTensor> FlipImages(const DeviceTensor& image, const ImageDims& d, bool up_down,
                                const std::vector<bool>& flip, Stream& stream,
                                std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor out, NewOutput(stream, image.dtype(), image.shape()));
  SLUICE_RETURN_IF_ERROR(FlipImagesInto(image, d, up_down, flip, out, stream, op));
  return out;
}

Result<DeviceTensor> Flip(const DeviceTensor& image, bool up_down, Stream& stream,
                          std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, stream, op));
  return FlipImages(image, d, up_down, {}, stream, op);
}

Status FlipInto(const DeviceTensor& image, bool up_down, DeviceTensor* out, Stream& stream,
                std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, stream, op));
  SLUICE_RETURN_IF_ERROR(CheckOutput(out, image.dtype(), image.shape(), stream, op));
  return FlipImagesInto(image, d, up_down, {}, *out, stream, op);
}

Result<DeviceTensor> RandomFlip(const DeviceTensor& image, Rng& rng, bool up_down, Stream& stream,
                                std::string_view op) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, stream, op));
  std::vector<bool> flip(d.batch);
  for (int64_t b = 0; b < d.batch; ++b) flip[b] = ops::SampleFlip(rng);
  if (!d.batched && !flip[0]) return image;
  return FlipImages(image, d, up_down, flip, stream, op);
}

// The image's dims, if `w` lies inside it.
Result<ImageDims> CheckCrop(const DeviceTensor& image, const ops::CropWindow& w,
                            const Stream& stream) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image, stream, "Crop"));
  if (w.y < 0 || w.x < 0 || w.height <= 0 || w.width <= 0 || w.height > d.height - w.y ||
      w.width > d.width - w.x) {
    return Status::InvalidArgument(fmt::format(
        "gpu::Crop: window {{y={}, x={}, height={}, width={}}} must have y, x >= 0, height, "
        "width > 0 and lie inside the image of shape {}",
        w.y, w.x, w.height, w.width, image.shape().ToString()));
  }
  return d;
}

// Queues the crop into `out`. REQUIRES: CheckCrop passed; out checked.
Status CropTo(const DeviceTensor& image, const ImageDims& d, const ops::CropWindow& w,
              DeviceTensor& out, Stream& stream) {
  gpu_internal::CropArgs a;
  a.in = image.raw_data();
  a.out = out.raw_data();
  a.elem_size = static_cast<int>(DTypeSize(image.dtype()));
  a.in_geometry = Geometry(d);
  a.y0 = w.y;
  a.x0 = w.x;
  a.height = w.height;
  a.width = w.width;
  return Enqueue(stream, "Crop", [a](KernelTarget t) { return RunCrop(a, t); });
}

}  // namespace

Result<DeviceTensor> Crop(const DeviceTensor& image, const ops::CropWindow& w, Stream& stream) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckCrop(image, w, stream));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor out, NewOutput(stream, image.dtype(),
                                                      d.WithSize(w.height, w.width, d.channels)));
  SLUICE_RETURN_IF_ERROR(CropTo(image, d, w, out, stream));
  return out;
}

Status CropInto(const DeviceTensor& image, const ops::CropWindow& w, DeviceTensor* out,
                Stream& stream) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckCrop(image, w, stream));
  SLUICE_RETURN_IF_ERROR(CheckOutput(out, image.dtype(), d.WithSize(w.height, w.width, d.channels),
                                     stream, "CropInto"));
  return CropTo(image, d, w, *out, stream);
}

Result<DeviceTensor> FlipLeftRight(const DeviceTensor& image, Stream& stream) {
  return Flip(image, false, stream, "FlipLeftRight");
}
Result<DeviceTensor> FlipUpDown(const DeviceTensor& image, Stream& stream) {
  return Flip(image, true, stream, "FlipUpDown");
}
Result<DeviceTensor> RandomFlipLeftRight(const DeviceTensor& image, Rng& rng, Stream& stream) {
  return RandomFlip(image, rng, false, stream, "RandomFlipLeftRight");
}
Result<DeviceTensor> RandomFlipUpDown(const DeviceTensor& image, Rng& rng, Stream& stream) {
  return RandomFlip(image, rng, true, stream, "RandomFlipUpDown");
}
Status FlipLeftRightInto(const DeviceTensor& image, DeviceTensor* out, Stream& stream) {
  return FlipInto(image, false, out, stream, "FlipLeftRightInto");
}
Status FlipUpDownInto(const DeviceTensor& image, DeviceTensor* out, Stream& stream) {
  return FlipInto(image, true, out, stream, "FlipUpDownInto");
}

namespace {

Status CheckResize(const DeviceTensor& image, const Stream& stream,
                   const ops::ResizeOptions& options) {
  using ops::ResizeMethod;
  SLUICE_RETURN_IF_ERROR(CheckStream(image, stream, "Resize"));
  const bool nearest = options.method == ResizeMethod::kNearest;
  if (!(nearest || (options.method == ResizeMethod::kBilinear && !options.antialias))) {
    return Status::InvalidArgument(fmt::format(
        "gpu::Resize: method {}{} runs on the host only (ops::Resize); devices have "
        "bilinear without antialias and nearest",
        ops::ResizeMethodName(options.method), options.antialias ? " with antialias" : ""));
  }
  return ops_internal::CheckNumeric(image.dtype(), "Resize", nearest);
}

// Resizes into `out`, whose shape is the size. REQUIRES: CheckResize passed.
Status ResizeTo(const DeviceTensor& image, DeviceTensor& out, Stream& stream,
                const ops::ResizeOptions& options) {
  const bool nearest = options.method == ops::ResizeMethod::kNearest;
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, ops_internal::GetImageDims(image.shape(), "Resize"));
  const Shape& shape = out.shape();
  const int64_t out_h = shape.dim(shape.rank() - 3), out_w = shape.dim(shape.rank() - 2);
  if (!nearest && out_h == d.height && out_w == d.width) {
    // TF's shortcut, as ops::Resize: the same size is a cast to float.
    return CastInto(image, &out, stream);
  }
  gpu_internal::ResizeArgs a;
  a.in = image.raw_data();
  a.out = out.raw_data();
  a.type = ToElem(image.dtype());
  a.method = nearest ? gpu_internal::ResizeArgs::Method::kNearest
                     : gpu_internal::ResizeArgs::Method::kBilinear;
  a.in_geometry = Geometry(d);
  a.out_height = out_h;
  a.out_width = out_w;
  a.scale_y = static_cast<float>(d.height) / static_cast<float>(out_h);
  a.scale_x = static_cast<float>(d.width) / static_cast<float>(out_w);
  return Enqueue(stream, "Resize", [a](KernelTarget t) { return RunResize(a, t); });
}

}  // namespace

Result<DeviceTensor> Resize(const DeviceTensor& image, ops::ImageSize size, Stream& stream,
                            const ops::ResizeOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckResize(image, stream, options));
  SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::ResizeOutputShape(image.shape(), size, options));
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, ops_internal::GetImageDims(image.shape(), "Resize"));
  if (options.method != ops::ResizeMethod::kNearest && shape.dim(shape.rank() - 3) == d.height &&
      shape.dim(shape.rank() - 2) == d.width) {
    return Cast(image, DType::kFloat32, stream);  // TF's shortcut (may return the input)
  }
  SLUICE_ASSIGN_OR_RETURN(
      DeviceTensor out,
      NewOutput(stream, ops::ResizeOutputDType(image.dtype(), options.method), shape));
  SLUICE_RETURN_IF_ERROR(ResizeTo(image, out, stream, options));
  return out;
}

Status ResizeInto(const DeviceTensor& image, DeviceTensor* out, Stream& stream,
                  const ops::ResizeOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckResize(image, stream, options));
  if (out == nullptr || out->rank() < 3) {
    return Status::InvalidArgument(
        fmt::format("gpu::ResizeInto: out must be an image or a batch of images, got {}",
                    out == nullptr ? std::string("null") : out->DebugString()));
  }
  const Shape& o = out->shape();
  const ops::ImageSize size{o.dim(o.rank() - 3), o.dim(o.rank() - 2)};
  SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::ResizeOutputShape(image.shape(), size, options));
  SLUICE_RETURN_IF_ERROR(CheckOutput(out, ops::ResizeOutputDType(image.dtype(), options.method),
                                     shape, stream, "ResizeInto"));
  return ResizeTo(image, *out, stream, options);
}

namespace {

// Normalize's arguments but the input and output pointers, once checked.
Result<gpu_internal::NormalizeArgs> NormalizeSetup(const DeviceTensor& image,
                                                   std::span<const float> mean,
                                                   std::span<const float> stddev,
                                                   const Stream& stream) {
  SLUICE_RETURN_IF_ERROR(CheckStream(image, stream, "Normalize"));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(image.dtype(), "Normalize"));
  const Shape& shape = image.shape();
  if (shape.rank() < 1) {
    return Status::InvalidArgument(
        "gpu::Normalize: image must have a channel dimension, got shape " + shape.ToString());
  }
  const int64_t channels = shape.dim(shape.rank() - 1);
  for (auto [values, name] : {std::pair{mean, "mean"}, std::pair{stddev, "stddev"}}) {
    if (values.size() != 1 && (values.empty() || static_cast<int64_t>(values.size()) != channels)) {
      return Status::InvalidArgument(
          fmt::format("gpu::Normalize: {} has {} values, expected 1 or {} (channels of shape {})",
                      name, values.size(), channels, shape.ToString()));
    }
  }
  for (float x : stddev) {
    if (x == 0.0f || !std::isfinite(x)) {
      return Status::InvalidArgument(
          fmt::format("gpu::Normalize: stddev values must be finite and non-zero, got {}", x));
    }
  }
  gpu_internal::NormalizeArgs a;
  // One value each for all channels: the loop cycles over a single "channel".
  a.channels = mean.size() == 1 && stddev.size() == 1 ? 1 : channels;
  if (a.channels > gpu_internal::kMaxNormalizeChannels) {
    return Status::InvalidArgument(fmt::format(
        "gpu::Normalize: {} per-channel values; devices take at most {} (use ops::Normalize)",
        channels, gpu_internal::kMaxNormalizeChannels));
  }
  for (int64_t c = 0; c < a.channels; ++c) {
    a.mean[c] = mean[mean.size() == 1 ? 0 : c];
    a.stddev[c] = stddev[stddev.size() == 1 ? 0 : c];
  }
  a.type = ToElem(image.dtype());
  a.count = image.num_elements();
  return a;
}

Status NormalizeTo(gpu_internal::NormalizeArgs a, const DeviceTensor& image, DeviceTensor& out,
                   Stream& stream) {
  a.in = image.raw_data();
  a.out = static_cast<float*>(out.raw_data());
  return Enqueue(stream, "Normalize", [a](KernelTarget t) { return RunNormalize(a, t); });
}

}  // namespace

Status NormalizeInto(const DeviceTensor& image, std::span<const float> mean,
                     std::span<const float> stddev, DeviceTensor* out, Stream& stream) {
  SLUICE_ASSIGN_OR_RETURN(gpu_internal::NormalizeArgs a,
                          NormalizeSetup(image, mean, stddev, stream));
  SLUICE_RETURN_IF_ERROR(CheckOutput(out, DType::kFloat32, image.shape(), stream, "NormalizeInto"));
  return NormalizeTo(a, image, *out, stream);
}

Result<DeviceTensor> Normalize(const DeviceTensor& image, std::span<const float> mean,
                               std::span<const float> stddev, Stream& stream) {
  SLUICE_ASSIGN_OR_RETURN(gpu_internal::NormalizeArgs a,
                          NormalizeSetup(image, mean, stddev, stream));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor out, NewOutput(stream, DType::kFloat32, image.shape()));
  SLUICE_RETURN_IF_ERROR(NormalizeTo(a, image, out, stream));
  return out;
}

Result<DeviceTensor> Cast(const DeviceTensor& x, DType dtype, Stream& stream) {
  SLUICE_RETURN_IF_ERROR(CheckStream(x, stream, "Cast"));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(x.dtype(), "Cast"));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(dtype, "Cast"));
  if (x.dtype() == dtype) return x;
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor out, NewOutput(stream, dtype, x.shape()));
  SLUICE_RETURN_IF_ERROR(CastInto(x, &out, stream));
  return out;
}

Status CastInto(const DeviceTensor& x, DeviceTensor* out, Stream& stream) {
  SLUICE_RETURN_IF_ERROR(CheckStream(x, stream, "Cast"));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(x.dtype(), "Cast"));
  if (out == nullptr) return Status::InvalidArgument("gpu::CastInto: out is null");
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(out->dtype(), "Cast"));
  SLUICE_RETURN_IF_ERROR(CheckOutput(out, out->dtype(), x.shape(), stream, "CastInto"));
  if (x.dtype() == out->dtype()) {  // the bytes as they are
    if (x.byte_size() == 0) return Status::OK();
    return stream.CopyAsync(out->raw_data(), x.raw_data(), x.byte_size(),
                            CopyDirection::kDeviceToDevice);
  }
  gpu_internal::CastArgs a;
  a.in = x.raw_data();
  a.out = out->raw_data();
  a.from = ToElem(x.dtype());
  a.to = ToElem(out->dtype());
  a.count = x.num_elements();
  return Enqueue(stream, "Cast", [a](KernelTarget t) { return RunCast(a, t); });
}

}  // namespace sluice::gpu
