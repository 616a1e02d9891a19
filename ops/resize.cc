#include "sluice/ops/resize.h"

#include <cmath>
#include <limits>
#include <string>

#include "sluice/ops/internal/image_dims.h"
#include "sluice/ops/internal/resize_kernels.h"
#include "sluice/ops/internal/resize_taps.h"

namespace sluice::ops {
namespace {

using ops_internal::AxisTaps;
using ops_internal::ImageDims;
using ops_internal::ImageView;
using ops_internal::SamplingKernel;

// TF keeps image sides and sizes in int32.
constexpr int64_t kMaxSide = std::numeric_limits<int32_t>::max();

struct NamedMethod {
  ResizeMethod method;
  std::string_view name;
};
constexpr NamedMethod kMethods[] = {
    {ResizeMethod::kBilinear, "bilinear"}, {ResizeMethod::kNearest, "nearest"},
    {ResizeMethod::kBicubic, "bicubic"},   {ResizeMethod::kArea, "area"},
    {ResizeMethod::kLanczos3, "lanczos3"}, {ResizeMethod::kLanczos5, "lanczos5"},
    {ResizeMethod::kGaussian, "gaussian"}, {ResizeMethod::kMitchellCubic, "mitchellcubic"},
};

std::string SizeString(int64_t h, int64_t w) {
  return "[" + std::to_string(h) + ", " + std::to_string(w) + "]";
}

Result<ImageDims> CheckImage(const Shape& shape) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, ops_internal::GetImageDims(shape, "Resize"));
  if (d.channels <= 0) {
    return Status::InvalidArgument("Resize: image must have at least one channel, got shape " +
                                   shape.ToString());
  }
  if (d.height <= 0 || d.width <= 0 || d.batch < 0) {
    return Status::InvalidArgument(
        "Resize: image must have a non-zero height and width, got shape " + shape.ToString());
  }
  if (d.height > kMaxSide || d.width > kMaxSide) {
    return Status::InvalidArgument("Resize: image height and width must be below 2^31, got shape " +
                                   shape.ToString());
  }
  return d;
}

Status CheckSize(int64_t h, int64_t w, std::string_view what) {
  if (h <= 0 || w <= 0 || h > kMaxSide || w > kMaxSide) {
    return Status::InvalidArgument("Resize: " + std::string(what) +
                                   " must be positive and below 2^31, got " + SizeString(h, w));
  }
  return Status::OK();
}

ImageView ViewOf(const Tensor& t, const ImageDims& d) {
  ImageView v;
  v.data = t.raw_data();
  v.dtype = t.dtype();
  v.batch = d.batch;
  v.height = d.height;
  v.width = d.width;
  v.channels = d.channels;
  v.row_stride = d.width * d.channels;
  v.image_stride = d.height * v.row_stride;
  return v;
}

SamplingKernel KernelOf(ResizeMethod method) {
  switch (method) {
    case ResizeMethod::kBicubic: return SamplingKernel::kKeysCubic;
    case ResizeMethod::kLanczos3: return SamplingKernel::kLanczos3;
    case ResizeMethod::kLanczos5: return SamplingKernel::kLanczos5;
    case ResizeMethod::kGaussian: return SamplingKernel::kGaussian;
    case ResizeMethod::kMitchellCubic: return SamplingKernel::kMitchellCubic;
    default: return SamplingKernel::kTriangle;
  }
}

}  // namespace

std::string_view ResizeMethodName(ResizeMethod method) {
  for (const NamedMethod& m : kMethods) {
    if (m.method == method) return m.name;
  }
  return "unknown";
}

Result<ResizeMethod> ResizeMethodFromName(std::string_view name) {
  for (const NamedMethod& m : kMethods) {
    if (m.name == name) return m.method;
  }
  if (name == "nearest_neighbor") return ResizeMethod::kNearest;
  return Status::InvalidArgument("Resize: unknown method \"" + std::string(name) +
                                 "\" (expected bilinear, nearest, bicubic, area, lanczos3, "
                                 "lanczos5, gaussian or mitchellcubic)");
}

DType ResizeOutputDType(DType input, ResizeMethod method) {
  return method == ResizeMethod::kNearest ? input : DType::kFloat32;
}

Result<Shape> ResizeOutputShape(const Shape& image, ImageSize size, const ResizeOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image));
  SLUICE_RETURN_IF_ERROR(CheckSize(size.height, size.width, "size"));
  int64_t h = size.height, w = size.width;
  if (options.preserve_aspect_ratio) {
    // TF: scale = min(h / height, w / width) in float32, sides rounded half
    // to even.
    const float sh = static_cast<float>(h) / static_cast<float>(d.height);
    const float sw = static_cast<float>(w) / static_cast<float>(d.width);
    const float s = std::min(sh, sw);
    h = static_cast<int64_t>(std::nearbyint(s * static_cast<float>(d.height)));
    w = static_cast<int64_t>(std::nearbyint(s * static_cast<float>(d.width)));
    SLUICE_RETURN_IF_ERROR(CheckSize(
        h, w, "size after preserve_aspect_ratio from " + SizeString(size.height, size.width)));
  }
  if (options.max_pixels <= 0) {
    return Status::InvalidArgument("Resize: max_pixels must be > 0, got " +
                                   std::to_string(options.max_pixels));
  }
  if (h * w > options.max_pixels) {  // both below 2^31: no overflow
    return Status::ResourceExhausted("Resize: the output " + SizeString(h, w) + " has " +
                                     std::to_string(h * w) + " pixels, more than max_pixels (" +
                                     std::to_string(options.max_pixels) + ")");
  }
  return d.WithSize(h, w, d.channels);
}

Result<Tensor> Resize(const Tensor& image, ImageSize size, const ResizeOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(Shape shape, ResizeOutputShape(image.shape(), size, options));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(
      image.dtype(), "Resize", /*allow_bool=*/options.method == ResizeMethod::kNearest));
  SLUICE_ASSIGN_OR_RETURN(
      Tensor out, Tensor::Allocate(ResizeOutputDType(image.dtype(), options.method), shape));
  ResizeOptions fixed = options;
  fixed.preserve_aspect_ratio = false;
  SLUICE_RETURN_IF_ERROR(ResizeInto(image, &out, fixed));
  return out;
}

Status ResizeInto(const Tensor& image, Tensor* out, const ResizeOptions& options) {
  if (options.preserve_aspect_ratio) {
    return Status::InvalidArgument(
        "ResizeInto: preserve_aspect_ratio is not supported (the output's shape is the size; "
        "use ResizeOutputShape to compute it)");
  }
  SLUICE_ASSIGN_OR_RETURN(ImageDims d, CheckImage(image.shape()));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(
      image.dtype(), "Resize", /*allow_bool=*/options.method == ResizeMethod::kNearest));
  if (out == nullptr) return Status::InvalidArgument("ResizeInto: output is null");
  const Shape& os = out->shape();
  const int off = d.batched ? 1 : 0;
  if (os.rank() != image.shape().rank() || (d.batched && os.dim(0) != d.batch) ||
      os.dim(off + 2) != d.channels) {
    return Status::InvalidArgument("ResizeInto: output shape " + os.ToString() +
                                   " does not fit image shape " + image.shape().ToString() +
                                   " (same rank, batch and channels)");
  }
  const int64_t h = os.dim(off), w = os.dim(off + 1);
  SLUICE_RETURN_IF_ERROR(CheckSize(h, w, "output size"));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckOutput(
      image, out, ResizeOutputDType(image.dtype(), options.method), os, "ResizeInto"));
  ops_internal::ResizeView(ViewOf(image, d), h, w, options, out->raw_data());
  return Status::OK();
}

}  // namespace sluice::ops

namespace sluice::ops_internal {

void ResizeView(const ImageView& in, int64_t out_height, int64_t out_width,
                const ops::ResizeOptions& options, void* out) {
  using ops::ResizeMethod;
  if (in.batch == 0) return;
  auto* fout = static_cast<float*>(out);
  switch (options.method) {
    case ResizeMethod::kNearest:
      ResizeNearest(in, NearestTaps(in.height, out_height), NearestTaps(in.width, out_width), out);
      return;
    case ResizeMethod::kArea: {
      const AxisTaps ys = AreaTaps(in.height, out_height);
      const AxisTaps xs = AreaTaps(in.width, out_width);
      const float norm = AreaNormalizer(in.height, out_height, in.width, out_width);
      ResizeHorizontalFirst(in, ys, xs, norm, fout);
      return;
    }
    case ResizeMethod::kBilinear:
      if (options.antialias) break;
      if (out_height == in.height && out_width == in.width) {
        CastToFloat(in, fout);  // TF's shortcut; also exact for inf and NaN
      } else {
        ResizeBilinear(in, BilinearTaps(in.height, out_height), BilinearTaps(in.width, out_width),
                       fout);
      }
      return;
    case ResizeMethod::kBicubic:
      if (options.antialias) break;
      ResizeVerticalFirst(in, BicubicTaps(in.height, out_height), BicubicTaps(in.width, out_width),
                          fout);
      return;
    default: break;
  }
  // scale_and_translate: antialiased bilinear/bicubic, and the other kernels
  // with or without antialiasing.
  const SamplingKernel k = ops::KernelOf(options.method);
  ResizeVerticalFirst(in, KernelTaps(k, in.height, out_height, options.antialias),
                      KernelTaps(k, in.width, out_width, options.antialias), fout);
}

}  // namespace sluice::ops_internal
