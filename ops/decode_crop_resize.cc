#include "sluice/ops/decode_crop_resize.h"

#include <algorithm>
#include <string>

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "sluice/ops/decode_image.h"
#include "sluice/ops/internal/jpeg_region.h"
#include "sluice/ops/internal/resize_kernels.h"
#include "sluice/ops/internal/row_ops.h"

namespace sluice::ops {
namespace {

std::string Named(std::string_view name) {
  return name.empty() ? std::string() : " (" + std::string(name) + ")";
}

// Resizes the pixels `v` views into `out` (the output size and dtype).
void ResizeToOutput(const ops_internal::ImageView& v, const DecodeCropResizeOptions& o,
                    Tensor& out) {
  ops_internal::ResizeView(v, o.size.height, o.size.width, ResizeOptions{.method = o.method},
                           out.raw_data());
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

// Bilinear resize of a sub-pixel window of the pixels `v` views into `out`.
void ResizeSubpixel(const ops_internal::ImageView& v, double y, double x, double height,
                    double width, const DecodeCropResizeOptions& o, Tensor& out) {
  ops_internal::ResizeBilinear(v, SubpixelTaps(v.height, y, height, o.size.height),
                               SubpixelTaps(v.width, x, width, o.size.width),
                               out.flat<float>().data());
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
  if (o.mean.empty() != o.stddev.empty()) {
    return Status::InvalidArgument("DecodeCropResize: give both mean and stddev, or neither" +
                                   Named(o.name));
  }
  for (const std::vector<float>* v : {&o.mean, &o.stddev}) {
    if (v->size() > 1 && static_cast<int>(v->size()) != o.channels) {
      return Status::InvalidArgument(
          "DecodeCropResize: " + std::string(v == &o.mean ? "mean" : "stddev") + " has " +
          std::to_string(v->size()) + " values, expected 1 or " + std::to_string(o.channels) +
          " (channels)" + Named(o.name));
    }
  }
  for (float x : o.stddev) {
    if (x == 0.0f || !std::isfinite(x)) {
      return Status::InvalidArgument(
          "DecodeCropResize: stddev values must be finite and non-zero, got " + std::to_string(x) +
          Named(o.name));
    }
  }
  if (!o.mean.empty() && o.method == ResizeMethod::kNearest) {
    return Status::InvalidArgument(
        "DecodeCropResize: mean and stddev need a float output; kNearest keeps uint8 (use "
        "Normalize on the result)" +
        Named(o.name));
  }
  return Status::OK();
}

// Mirroring and normalization of finished output rows, each done while the
// row is in L1: the bits of FlipLeftRight and Normalize over the image.
class RowFinish {
 public:
  RowFinish(const DecodeCropResizeOptions& o, bool mirror)
      : mirror_(mirror), width_(o.size.width), channels_(o.channels) {
    if (!o.mean.empty()) {
      std::vector<float> mean, stddev;
      for (int64_t c = 0; c < channels_; ++c) {
        mean.push_back(o.mean.size() == 1 ? o.mean[0] : o.mean[c]);
        stddev.push_back(o.stddev.size() == 1 ? o.stddev[0] : o.stddev[c]);
      }
      normalize_.emplace(mean.data(), stddev.data(), channels_);
    }
    if (mirror_) line_.resize(static_cast<size_t>(width_ * channels_ + 4));
  }
  bool any() const { return mirror_ || normalize_.has_value(); }
  // Where a row should be written first: dst itself, or a scratch row.
  float* Staging(float* dst) { return mirror_ ? line_.data() : dst; }
  // Finishes the row written at Staging(dst) into dst.
  void Finish(float* dst) {
    const int64_t n = width_ * channels_;
    if (mirror_ && normalize_) {
      normalize_->ApplyMirrored(line_.data(), width_, dst);
      return;
    }
    if (mirror_) {
      ops_internal::ReverseRow(reinterpret_cast<const uint8_t*>(line_.data()), width_,
                               channels_ * static_cast<int64_t>(sizeof(float)),
                               reinterpret_cast<uint8_t*>(dst));
    }
    if (normalize_) normalize_->Apply(dst, n, dst);
  }
  // Finishes every row of a resized [height, width, channels] output, in
  // place (uint8 for kNearest, which is never normalized).
  void FinishAll(Tensor& out) {
    if (!any()) return;
    const int64_t n = width_ * channels_;
    const auto esize = static_cast<int64_t>(DTypeSize(out.dtype()));
    auto* base = static_cast<uint8_t*>(out.raw_data());
    std::vector<uint8_t> copy(static_cast<size_t>(mirror_ ? n * esize : 0));
    for (int64_t y = 0; y < out.shape().dim(0); ++y) {
      uint8_t* row = base + y * n * esize;
      if (mirror_) {
        std::memcpy(copy.data(), row, copy.size());
        ops_internal::ReverseRow(copy.data(), width_, channels_ * esize, row);
      }
      if (normalize_) {
        auto* f = reinterpret_cast<float*>(row);
        normalize_->Apply(f, n, f);
      }
    }
  }

 private:
  bool mirror_;
  int64_t width_, channels_;
  std::optional<ops_internal::RowNormalizer> normalize_;
  std::vector<float> line_;
};

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

// The unfused path's JPEG decode: the whole image at full resolution.
DecodeJpegOptions WholeJpegOptions(const DecodeCropResizeOptions& o) {
  DecodeJpegOptions jo;
  jo.channels = o.channels;
  jo.dct_method = o.dct_method;
  jo.max_pixels = o.max_pixels;
  jo.name = o.name;
  return jo;
}

// The whole JPEG decoded band by band, the window's rows resized as they
// arrive and each output row finished at once: the pixels of
// DecodeImage + crop + ResizeToOutput (BilinearRowStream's arithmetic is
// ResizeBilinear's), without holding the decoded image.
Status StreamWindow(std::string_view bytes, const CropWindow& w, const DecodeCropResizeOptions& o,
                    RowFinish& finish, Tensor& out) {
  const int64_t C = o.channels;
  ops_internal::BilinearRowStream stream(w.width, C,
                                         ops_internal::BilinearTaps(w.height, o.size.height),
                                         ops_internal::BilinearTaps(w.width, o.size.width));
  float* base = out.flat<float>().data();
  const int64_t len = stream.row_floats();
  const ops_internal::JpegRowsFn fn = [&](int64_t y0, int64_t n, const uint8_t* rows,
                                          int64_t stride) {
    const int64_t end = std::min<int64_t>(y0 + n, w.y + w.height);
    for (int64_t y = std::max<int64_t>(y0, w.y); y < end; ++y) {
      stream.Push(y - w.y, rows + (y - y0) * stride + w.x * C);
      while (stream.Ready()) {
        float* dst = base + stream.taken() * len;
        stream.Take(finish.Staging(dst));
        finish.Finish(dst);
      }
    }
  };
  SLUICE_RETURN_IF_ERROR(ops_internal::DecodeJpegRows(bytes, WholeJpegOptions(o), fn));
  // Every row came (zeros past an accepted truncation), so every output row
  // was finished; anything else is a bug here, not bad input.
  if (stream.taken() != o.size.height) {
    return Status::Internal("DecodeCropResize: " + std::to_string(stream.taken()) + " of " +
                            std::to_string(o.size.height) + " output rows were made" +
                            Named(o.name));
  }
  return Status::OK();
}

Status DecodeScaledWindow(std::string_view bytes, const CropWindow& full, const CropWindow& w,
                          const DecodeCropResizeOptions& o, Tensor& out);

// DecodeCropResize into `out` (checked by the caller) once the options are
// checked and the image's size read.
Status DecodeWindow(std::string_view bytes, const CropWindow& full, const CropWindow& w,
                    const DecodeCropResizeOptions& o, bool mirror, Tensor& out) {
  if (w.height < 1 || w.width < 1 || w.y < 0 || w.x < 0 || w.y + w.height > full.height ||
      w.x + w.width > full.width) {
    return Status::InvalidArgument(
        "DecodeCropResize: window y=" + std::to_string(w.y) + " x=" + std::to_string(w.x) +
        " height=" + std::to_string(w.height) + " width=" + std::to_string(w.width) +
        " is not inside the " + std::to_string(full.height) + "x" + std::to_string(full.width) +
        " image" + Named(o.name));
  }
  RowFinish finish(o, mirror);
  const bool jpeg = DetectImageFormat(bytes) == ImageFormat::kJpeg;
  if (jpeg && !o.fused && o.method == ResizeMethod::kBilinear) {
    return StreamWindow(bytes, w, o, finish, out);
  }
  if (!o.fused || !jpeg) {
    Tensor image;
    if (jpeg) {
      SLUICE_ASSIGN_OR_RETURN(image, DecodeJpeg(bytes, WholeJpegOptions(o)));
    } else {
      SLUICE_ASSIGN_OR_RETURN(
          image,
          DecodeImage(bytes, {.channels = o.channels, .max_pixels = o.max_pixels, .name = o.name}));
    }
    ResizeToOutput(WindowView(image, w), o, out);
  } else {
    SLUICE_RETURN_IF_ERROR(DecodeScaledWindow(bytes, full, w, o, out));
  }
  finish.FinishAll(out);
  return Status::OK();
}

// The fused path: only the window's iMCU rows and columns, DCT-scaled.
Status DecodeScaledWindow(std::string_view bytes, const CropWindow& full, const CropWindow& w,
                          const DecodeCropResizeOptions& o, Tensor& out) {
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
    ResizeSubpixel(view, static_cast<double>(w.y) / d - static_cast<double>(sw_win.y),
                   static_cast<double>(w.x) / d - static_cast<double>(sw_win.x),
                   static_cast<double>(w.height) / d, static_cast<double>(w.width) / d, o, out);
  } else {
    ResizeToOutput(view, o, out);
  }
  return Status::OK();
}

// The output's dtype and shape.
DType OutputDType(const DecodeCropResizeOptions& o) {
  return ResizeOutputDType(DType::kUInt8, o.method);
}
Shape OutputShape(const DecodeCropResizeOptions& o) {
  return Shape{o.size.height, o.size.width, o.channels};
}

Status CheckInto(const DecodeCropResizeOptions& o, const Tensor* out, std::string_view op) {
  if (out == nullptr) return Status::InvalidArgument(std::string(op) + ": output is null");
  if (out->dtype() != OutputDType(o) || !(out->shape() == OutputShape(o))) {
    return Status::InvalidArgument(
        std::string(op) + ": output must be " + std::string(DTypeName(OutputDType(o))) +
        OutputShape(o).ToString() + ", got " + std::string(DTypeName(out->dtype())) +
        out->shape().ToString() + Named(o.name));
  }
  return Status::OK();
}

// Both entry points, into `out`; rng null for DecodeCropResize.
Status Run(std::string_view bytes, Rng* rng, const CropWindow* window,
           const DecodeCropResizeOptions& o, Tensor& out) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(o));
  if (rng == nullptr && o.mirror == Mirror::kRandom) {
    return Status::InvalidArgument(
        "DecodeCropResize: Mirror::kRandom needs an Rng (use DecodeRandomCropResize)" +
        Named(o.name));
  }
  SLUICE_ASSIGN_OR_RETURN(CropWindow full, HeaderSize(bytes, o));
  CropWindow w;
  if (window != nullptr) {
    w = *window;
  } else {
    SLUICE_ASSIGN_OR_RETURN(
        w, SampleRandomResizedCrop(full.height, full.width, *rng, o.scale, o.ratio));
  }
  const bool mirror =
      o.mirror == Mirror::kAlways || (o.mirror == Mirror::kRandom && SampleFlip(*rng));
  return DecodeWindow(bytes, full, w, o, mirror, out);
}

Result<Tensor> RunAllocating(std::string_view bytes, Rng* rng, const CropWindow* window,
                             const DecodeCropResizeOptions& o) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(o));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(OutputDType(o), OutputShape(o)));
  SLUICE_RETURN_IF_ERROR(Run(bytes, rng, window, o, out));
  return out;
}

}  // namespace

Result<Tensor> DecodeCropResize(std::string_view bytes, const CropWindow& w,
                                const DecodeCropResizeOptions& o) {
  return RunAllocating(bytes, nullptr, &w, o);
}

Result<Tensor> DecodeRandomCropResize(std::string_view bytes, Rng& rng,
                                      const DecodeCropResizeOptions& o) {
  return RunAllocating(bytes, &rng, nullptr, o);
}

Status DecodeCropResizeInto(std::string_view bytes, const CropWindow& w,
                            const DecodeCropResizeOptions& o, Tensor* out) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(o));
  SLUICE_RETURN_IF_ERROR(CheckInto(o, out, "DecodeCropResizeInto"));
  return Run(bytes, nullptr, &w, o, *out);
}

Status DecodeRandomCropResizeInto(std::string_view bytes, Rng& rng,
                                  const DecodeCropResizeOptions& o, Tensor* out) {
  SLUICE_RETURN_IF_ERROR(CheckOptions(o));
  SLUICE_RETURN_IF_ERROR(CheckInto(o, out, "DecodeRandomCropResizeInto"));
  return Run(bytes, &rng, nullptr, o, *out);
}

}  // namespace sluice::ops
