#include "sluice/ops/decode_crop_resize.h"

#include <algorithm>
#include <string>

#include "sluice/ops/decode_image.h"
#include "sluice/ops/internal/jpeg_region.h"
#include "sluice/ops/internal/resize_kernels.h"

namespace sluice::ops {
namespace {

std::string Named(std::string_view name) {
  return name.empty() ? std::string() : " (" + std::string(name) + ")";
}

// Resizes the pixels `v` views to the output size.
Result<Tensor> ResizeToOutput(const ops_internal::ImageView& v, const DecodeCropResizeOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::Allocate(ResizeOutputDType(v.dtype, o.method),
                                           Shape{o.size.height, o.size.width, v.channels}));
  ops_internal::ResizeView(v, o.size.height, o.size.width, ResizeOptions{.method = o.method},
                           out.raw_data());
  return out;
}

// The window `w` of a decoded [h, w, c] image, without copying it.
ops_internal::ImageView WindowView(const Tensor& image, const CropWindow& w) {
  const int64_t width = image.shape().dim(1), channels = image.shape().dim(2);
  ops_internal::ImageView v;
  v.dtype = image.dtype();
  v.row_stride = width * channels;
  v.image_stride = image.shape().dim(0) * v.row_stride;
  v.data = static_cast<const uint8_t*>(image.raw_data()) + (w.y * width + w.x) * channels;
  v.height = w.height;
  v.width = w.width;
  v.channels = channels;
  return v;
}

// A decoded region (uint8) as a view.
ops_internal::ImageView RegionView(const ops_internal::JpegRegion& r) {
  ops_internal::ImageView v;
  v.dtype = DType::kUInt8;
  v.data = r.data;
  v.height = r.height;
  v.width = r.width;
  v.channels = r.channels;
  v.row_stride = r.row_stride;
  v.image_stride = r.height * r.row_stride;
  return v;
}

// Bilinear taps (half-pixel centers, as resize_bilinear) sampling the span
// [offset, offset + extent) of an axis of `in_size` pixels.
ops_internal::LerpTaps SubpixelTaps(int64_t in_size, double offset, double extent,
                                    int64_t out_size) {
  ops_internal::LerpTaps t;
  t.lower.resize(out_size);
  t.upper.resize(out_size);
  t.lerp.resize(out_size);
  const double scale = extent / static_cast<double>(out_size);
  for (int64_t i = 0; i < out_size; ++i) {
    const double src = std::max(0.0, offset + (static_cast<double>(i) + 0.5) * scale - 0.5);
    const int64_t lo = std::min<int64_t>(static_cast<int64_t>(src), in_size - 1);
    t.lower[i] = static_cast<int32_t>(lo);
    t.upper[i] = static_cast<int32_t>(std::min<int64_t>(lo + 1, in_size - 1));
    t.lerp[i] = static_cast<float>(src - static_cast<double>(lo));
  }
  return t;
}

// Bilinear resize of a sub-pixel window of the pixels `v` views.
Result<Tensor> ResizeSubpixel(const ops_internal::ImageView& v, double y, double x, double height,
                              double width, const DecodeCropResizeOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(
      Tensor out,
      Tensor::Allocate(DType::kFloat32, Shape{o.size.height, o.size.width, v.channels}));
  ops_internal::ResizeBilinear(v, SubpixelTaps(v.height, y, height, o.size.height),
                               SubpixelTaps(v.width, x, width, o.size.width),
                               out.flat<float>().data());
  return out;
}

Status CheckOptions(const DecodeCropResizeOptions& o) {
  if (o.size.height < 1 || o.size.width < 1 || o.size.height > (int64_t{1} << 16) ||
      o.size.width > (int64_t{1} << 16)) {
    return Status::InvalidArgument("DecodeCropResize: output size must be 1..65536, got " +
                                   std::to_string(o.size.height) + "x" +
                                   std::to_string(o.size.width) + Named(o.name));
  }
  if (o.channels != 1 && o.channels != 3) {
    return Status::InvalidArgument("DecodeCropResize: channels must be 1 or 3, got " +
                                   std::to_string(o.channels) + Named(o.name));
  }
  return Status::OK();
}

Result<CropWindow> HeaderSize(std::string_view bytes, const DecodeCropResizeOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(
      Shape s, ImageOutputShape(
                   bytes, {.channels = o.channels, .max_pixels = o.max_pixels, .name = o.name}));
  return CropWindow{0, 0, s.dim(0), s.dim(1)};
}

}  // namespace

// Only 1/d scales: libjpeg-turbo's M/8 scales would fit more windows, but
// 5/8, 6/8 and 7/8 decode slower than 8/8 (C IDCTs, and 4:2:0 chroma at
// twice that scale) and 3/8 slower than 4/8, which serves every window 3/8
// would (bench/ops/jpeg_scale_bench.cc, docs/ops.md).
int FusedScaleDenominator(const CropWindow& w, ImageSize size) {
  for (int d : {8, 4, 2}) {
    if (w.height / d >= size.height && w.width / d >= size.width) return d;
  }
  return 1;
}

namespace {

// DecodeCropResize once the options are checked and the image's size read.
Result<Tensor> DecodeWindow(std::string_view bytes, const CropWindow& full, const CropWindow& w,
                            const DecodeCropResizeOptions& o) {
  if (w.height < 1 || w.width < 1 || w.y < 0 || w.x < 0 || w.y + w.height > full.height ||
      w.x + w.width > full.width) {
    return Status::InvalidArgument(
        "DecodeCropResize: window y=" + std::to_string(w.y) + " x=" + std::to_string(w.x) +
        " height=" + std::to_string(w.height) + " width=" + std::to_string(w.width) +
        " is not inside the " + std::to_string(full.height) + "x" + std::to_string(full.width) +
        " image" + Named(o.name));
  }
  if (!o.fused || DetectImageFormat(bytes) != ImageFormat::kJpeg) {
    SLUICE_ASSIGN_OR_RETURN(
        Tensor image,
        DecodeImage(bytes, {.channels = o.channels, .max_pixels = o.max_pixels, .name = o.name}));
    return ResizeToOutput(WindowView(image, w), o);
  }
  // The window in the 1/d-scaled image: the scaled pixels it overlaps.
  const int d = FusedScaleDenominator(w, o.size);
  const int64_t sh = JpegScaledSize(full.height, d), sw = JpegScaledSize(full.width, d);
  JpegCropWindow sw_win;
  sw_win.y = w.y / d;
  sw_win.x = w.x / d;
  sw_win.height = std::min<int64_t>(sh, (w.y + w.height + d - 1) / d) - sw_win.y;
  sw_win.width = std::min<int64_t>(sw, (w.x + w.width + d - 1) / d) - sw_win.x;
  DecodeJpegOptions jo;
  jo.channels = o.channels;
  jo.dct_method = o.dct_method;
  jo.ratio = d;
  jo.max_pixels = o.max_pixels;
  jo.name = o.name;
  // The decoded rows are resized where libjpeg wrote them (no copy).
  ops_internal::JpegRegion crop;
  SLUICE_RETURN_IF_ERROR(ops_internal::DecodeJpegRegion(bytes, sw_win, jo, &crop));
  const ops_internal::ImageView view = RegionView(crop);
  if (d > 1 && o.method == ResizeMethod::kBilinear) {
    // Sample exactly the requested window, a fraction of a scaled pixel
    // inside the decoded one, so a 1/d decode shifts nothing.
    return ResizeSubpixel(view, static_cast<double>(w.y) / d - static_cast<double>(sw_win.y),
                          static_cast<double>(w.x) / d - static_cast<double>(sw_win.x),
                          static_cast<double>(w.height) / d, static_cast<double>(w.width) / d, o);
  }
  return ResizeToOutput(view, o);
}

}  // namespace

Result<Tensor> DecodeCropResize(std::string_view bytes, const CropWindow& w,
                                const DecodeCropResizeOptions& o) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(o));
  SLUICE_ASSIGN_OR_RETURN(CropWindow full, HeaderSize(bytes, o));
  return DecodeWindow(bytes, full, w, o);
}

Result<Tensor> DecodeRandomCropResize(std::string_view bytes, Rng& rng,
                                      const DecodeCropResizeOptions& o) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(o));
  SLUICE_ASSIGN_OR_RETURN(CropWindow full, HeaderSize(bytes, o));
  SLUICE_ASSIGN_OR_RETURN(CropWindow w,
                          SampleRandomResizedCrop(full.height, full.width, rng, o.scale, o.ratio));
  return DecodeWindow(bytes, full, w, o);
}

}  // namespace sluice::ops
