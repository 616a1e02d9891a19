// SampleRandomResizedCrop and RandomResizedCrop (declared in image_ops.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/image_dims.h"
#include "sluice/ops/internal/resize_kernels.h"

namespace sluice::ops {
namespace {

bool ValidRange(const std::array<double, 2>& r) {
  return std::isfinite(r[0]) && std::isfinite(r[1]) && r[0] > 0 && r[0] <= r[1];
}

std::string RangeString(const std::array<double, 2>& r) {
  return "{" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + "}";
}

}  // namespace

Result<CropWindow> SampleRandomResizedCrop(int64_t height, int64_t width, Rng& rng,
                                           std::array<double, 2> scale,
                                           std::array<double, 2> ratio) {
  if (height <= 0 || width <= 0) {
    return Status::InvalidArgument("SampleRandomResizedCrop: image must be non-empty, got height " +
                                   std::to_string(height) + " and width " + std::to_string(width));
  }
  if (!ValidRange(scale) || !ValidRange(ratio)) {
    return Status::InvalidArgument("SampleRandomResizedCrop: scale " + RangeString(scale) +
                                   " and ratio " + RangeString(ratio) +
                                   " must be finite with 0 < low <= high");
  }
  const double h_d = static_cast<double>(height), w_d = static_cast<double>(width);
  const double area = h_d * w_d;
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (scale[0] + (scale[1] - scale[0]) * rng.UniformDouble());
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * rng.UniformDouble());
    // Python's round(): half to even, as nearbyint in the default mode.
    const double w = std::nearbyint(std::sqrt(target * aspect));
    const double h = std::nearbyint(std::sqrt(target / aspect));
    if (w > 0 && w <= w_d && h > 0 && h <= h_d) {
      const auto hi = static_cast<int64_t>(h), wi = static_cast<int64_t>(w);
      const auto y = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(height - hi) + 1));
      const auto x = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(width - wi) + 1));
      return CropWindow{y, x, hi, wi};
    }
  }
  // Fallback: the whole image, narrowed to the closest allowed aspect ratio.
  int64_t h = height, w = width;
  const double in_ratio = w_d / h_d;
  if (in_ratio < ratio[0]) {
    h = static_cast<int64_t>(std::nearbyint(w_d / ratio[0]));
  } else if (in_ratio > ratio[1]) {
    w = static_cast<int64_t>(std::nearbyint(h_d * ratio[1]));
  }
  h = std::clamp<int64_t>(h, 1, height);
  w = std::clamp<int64_t>(w, 1, width);
  return CropWindow{(height - h) / 2, (width - w) / 2, h, w};
}

Result<Tensor> RandomResizedCrop(const Tensor& image, ImageSize size, Rng& rng,
                                 const RandomResizedCropOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(ops_internal::ImageDims d,
                          ops_internal::GetImageDims(image.shape(), "RandomResizedCrop"));
  if (d.batched) {
    return Status::InvalidArgument(
        "RandomResizedCrop: image must be [height, width, channels] (one image), got shape " +
        image.shape().ToString());
  }
  const ResizeOptions ro{.method = options.method, .antialias = options.antialias};
  // Validates the size, the channels and a non-empty image.
  SLUICE_ASSIGN_OR_RETURN(Shape out_shape, ResizeOutputShape(image.shape(), size, ro));
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(image.dtype(), "RandomResizedCrop",
                                                    options.method == ResizeMethod::kNearest));
  SLUICE_ASSIGN_OR_RETURN(
      CropWindow w, SampleRandomResizedCrop(d.height, d.width, rng, options.scale, options.ratio));
  SLUICE_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::Allocate(ResizeOutputDType(image.dtype(), ro.method), out_shape));
  // Resize a view of the window: no copy of the crop.
  ops_internal::ImageView v;
  v.dtype = image.dtype();
  v.row_stride = d.width * d.channels;
  v.image_stride = d.height * v.row_stride;
  v.data = static_cast<const uint8_t*>(image.raw_data()) +
           (w.y * v.row_stride + w.x * d.channels) * DTypeSize(image.dtype());
  v.height = w.height;
  v.width = w.width;
  v.channels = d.channels;
  ops_internal::ResizeView(v, size.height, size.width, ro, out.raw_data());
  return out;
}

}  // namespace sluice::ops
