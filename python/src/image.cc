// sluice.image: the image ops of ops/ as ComponentOps (component_op.h), each
// usable eagerly and as a map function (python/sluice/image/ gives them
// tf.image's names, arguments and defaults).
//
// Ops with an *Into form write their result through
// ComponentContext::Allocate, so that a map feeding batch(n) writes each
// image straight into its row of the batch; the fused
// decode-random-crop-resize is written exactly as
// bench/peers/sluice_cases.cc's ImageAugment writes it.
#include "sluice_py.h"
// (sluice_py.h first: every file sees the same casters.)
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "component_op.h"
#include "sluice/ops/decode_crop_resize.h"
#include "sluice/ops/decode_image.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/png.h"
#include "sluice/ops/resize.h"

namespace sluice::python {
namespace {

using ops::CropWindow;
using ops::DecodeJpegOptions;
using ops::ImageSize;
using ops::JpegDctMethod;
using ops::ResizeMethod;

// The encoded bytes of a string scalar, or InvalidArgument.
Result<std::string_view> EncodedBytes(const Tensor& t) {
  if (t.dtype() != DType::kString || t.shape().rank() != 0) {
    return Status::InvalidArgument("expected the encoded image as a string scalar (bytes), got " +
                                   std::string(DTypeName(t.dtype())) + t.shape().ToString());
  }
  return t.scalar<std::string_view>();
}

Status CheckImage(const Tensor& t) {
  if (t.dtype() == DType::kString) {
    return Status::InvalidArgument("expected an image (a numeric tensor), got " +
                                   std::string(DTypeName(t.dtype())) + t.shape().ToString() +
                                   "; decode it first");
  }
  return Status::OK();
}

JpegDctMethod DctMethod(const std::string& name) {
  if (name.empty() || name == "INTEGER_FAST") return JpegDctMethod::kIntegerFast;
  if (name == "INTEGER_ACCURATE") return JpegDctMethod::kIntegerAccurate;
  throw nb::value_error(
      ("dct_method must be '', 'INTEGER_FAST' or 'INTEGER_ACCURATE', got '" + name + "'").c_str());
}

ResizeMethod Method(const std::string& name) { return Unwrap(ops::ResizeMethodFromName(name)); }

ImageSize Size(int64_t height, int64_t width) { return ImageSize{height, width}; }

std::array<double, 2> Pair(const std::vector<double>& v, const char* what) {
  if (v.size() != 2) throw nb::value_error((std::string(what) + " must be a pair").c_str());
  return {v[0], v[1]};
}

ops::CropWindow Window(const std::vector<int64_t>& w) {
  if (w.size() != 4) {
    throw nb::value_error("crop_window must be [offset_height, offset_width, height, width]");
  }
  return ops::CropWindow{w[0], w[1], w[2], w[3]};
}

ops::Mirror MirrorFrom(const std::string& name) {
  if (name == "never") return ops::Mirror::kNever;
  if (name == "always") return ops::Mirror::kAlways;
  if (name == "random") return ops::Mirror::kRandom;
  throw nb::value_error(
      ("mirror must be 'never', 'always' or 'random', got '" + name + "'").c_str());
}

ComponentOp Op(std::string name, ComponentKernel fn, std::optional<DType> input = std::nullopt,
               bool random = false) {
  return ComponentOp{std::move(fn), std::move(name), input, random};
}

// ---- Codecs -----------------------------------------------------------------

// tf.io.decode_jpeg's arguments, shared by decode_jpeg and decode_and_crop_jpeg.
DecodeJpegOptions JpegOptions(int channels, int ratio, bool fancy_upscaling,
                              bool try_recover_truncated, float acceptable_fraction,
                              const std::string& dct_method, bool strict, int64_t max_pixels) {
  DecodeJpegOptions o;
  o.channels = channels;
  o.ratio = ratio;
  o.fancy_upscaling = fancy_upscaling;
  o.try_recover_truncated = try_recover_truncated;
  o.acceptable_fraction = acceptable_fraction;
  o.dct_method = DctMethod(dct_method);
  o.strict = strict;
  o.max_pixels = max_pixels;
  return o;
}

ComponentOp DecodeJpegOp(int channels, int ratio, bool fancy_upscaling, bool try_recover_truncated,
                         float acceptable_fraction, const std::string& dct_method, bool strict,
                         int64_t max_pixels) {
  const DecodeJpegOptions o = JpegOptions(channels, ratio, fancy_upscaling, try_recover_truncated,
                                          acceptable_fraction, dct_method, strict, max_pixels);
  return Op(
      "decode_jpeg",
      [o](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(std::string_view bytes, EncodedBytes(in));
        SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::JpegOutputShape(bytes, o));
        SLUICE_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DType::kUInt8, shape));
        SLUICE_RETURN_IF_ERROR(ops::DecodeJpegInto(bytes, o, &out));
        return out;
      },
      DType::kString);
}

ComponentOp DecodeAndCropJpegOp(std::vector<int64_t> window, int channels, int ratio,
                                bool fancy_upscaling, bool try_recover_truncated,
                                float acceptable_fraction, const std::string& dct_method,
                                bool strict, int64_t max_pixels) {
  const CropWindow w = Window(window);
  const DecodeJpegOptions o = JpegOptions(channels, ratio, fancy_upscaling, try_recover_truncated,
                                          acceptable_fraction, dct_method, strict, max_pixels);
  const ops::JpegCropWindow jw{w.y, w.x, w.height, w.width};
  return Op(
      "decode_and_crop_jpeg",
      [o, jw](Tensor in, ComponentContext&) -> Result<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(std::string_view bytes, EncodedBytes(in));
        return ops::DecodeAndCropJpeg(bytes, jw, o);
      },
      DType::kString);
}

ComponentOp DecodePngOp(int channels, int bits, int64_t max_pixels) {
  ops::DecodePngOptions o;
  o.channels = channels;
  o.bits = bits;
  o.max_pixels = max_pixels;
  return Op(
      "decode_png",
      [o](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(std::string_view bytes, EncodedBytes(in));
        SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::PngOutputShape(bytes, o));
        SLUICE_ASSIGN_OR_RETURN(Tensor out,
                                ctx.Allocate(o.bits == 16 ? DType::kInt32 : DType::kUInt8, shape));
        SLUICE_RETURN_IF_ERROR(ops::DecodePngInto(bytes, o, &out));
        return out;
      },
      DType::kString);
}

ComponentOp DecodeImageOp(int channels, const std::string& dtype_name, int64_t max_pixels) {
  ops::DecodeImageOptions o;
  o.channels = channels;
  o.max_pixels = max_pixels;
  const DType dtype = Unwrap(DTypeFromName(dtype_name));
  return Op(
      "decode_image",
      [o, dtype](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(std::string_view bytes, EncodedBytes(in));
        SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::ImageOutputShape(bytes, o));
        if (dtype != DType::kUInt8) {
          SLUICE_ASSIGN_OR_RETURN(Tensor image, ops::DecodeImage(bytes, o));
          return ops::ConvertImageDtype(image, dtype);
        }
        SLUICE_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DType::kUInt8, shape));
        SLUICE_RETURN_IF_ERROR(ops::DecodeImageInto(bytes, o, &out));
        return out;
      },
      DType::kString);
}

ComponentOp ExtractJpegShapeOp(const std::string& dtype_name) {
  const DType dtype = Unwrap(DTypeFromName(dtype_name));
  if (dtype != DType::kInt32 && dtype != DType::kInt64) {
    throw nb::value_error("output_type must be int32 or int64");
  }
  return Op(
      "extract_jpeg_shape",
      [dtype](Tensor in, ComponentContext&) -> Result<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(std::string_view bytes, EncodedBytes(in));
        SLUICE_ASSIGN_OR_RETURN(ops::JpegHeader h, ops::ReadJpegHeader(bytes));
        if (dtype == DType::kInt32) {
          return Tensor::FromVector(std::vector<int32_t>{
              static_cast<int32_t>(h.height), static_cast<int32_t>(h.width), h.components});
        }
        return Tensor::FromVector(std::vector<int64_t>{h.height, h.width, h.components});
      },
      DType::kString);
}

ComponentOp EncodeJpegOp(int quality, bool progressive, bool optimize_size,
                         bool chroma_downsampling, int restart_interval) {
  ops::EncodeJpegOptions o;
  o.quality = quality;
  o.progressive = progressive;
  o.optimize_size = optimize_size;
  o.chroma_downsampling = chroma_downsampling;
  o.restart_interval = restart_interval;
  return Op("encode_jpeg", [o](Tensor in, ComponentContext&) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    SLUICE_ASSIGN_OR_RETURN(std::string bytes, ops::EncodeJpeg(in, o));
    return Tensor::StringScalar(bytes);
  });
}

ComponentOp EncodePngOp(int compression) {
  ops::EncodePngOptions o;
  o.compression = compression;
  return Op("encode_png", [o](Tensor in, ComponentContext&) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    SLUICE_ASSIGN_OR_RETURN(std::string bytes, ops::EncodePng(in, o));
    return Tensor::StringScalar(bytes);
  });
}

// ---- Geometry ------------------------------------------------------------------

ComponentOp ResizeOp(int64_t height, int64_t width, const std::string& method, bool antialias,
                     bool preserve_aspect_ratio) {
  ops::ResizeOptions o;
  o.method = Method(method);
  o.antialias = antialias;
  o.preserve_aspect_ratio = preserve_aspect_ratio;
  const ImageSize size = Size(height, width);
  return Op("resize", [o, size](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::ResizeOutputShape(in.shape(), size, o));
    SLUICE_ASSIGN_OR_RETURN(Tensor out,
                            ctx.Allocate(ops::ResizeOutputDType(in.dtype(), o.method), shape));
    ops::ResizeOptions into = o;
    into.preserve_aspect_ratio = false;  // the output's shape has the size
    SLUICE_RETURN_IF_ERROR(ops::ResizeInto(in, &out, into));
    return out;
  });
}

ComponentOp CropToBoundingBoxOp(int64_t y, int64_t x, int64_t height, int64_t width) {
  const CropWindow w{y, x, height, width};
  return Op("crop_to_bounding_box", [w](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    const int rank = in.shape().rank();
    if (rank != 3 && rank != 4) return ops::Crop(in, w);  // its error
    std::vector<int64_t> dims(in.shape().dims().begin(), in.shape().dims().end());
    dims[rank - 3] = w.height;
    dims[rank - 2] = w.width;
    SLUICE_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in.dtype(), Shape(dims)));
    SLUICE_RETURN_IF_ERROR(ops::CropInto(in, w, &out));
    return out;
  });
}

ComponentOp CentralCropOp(double fraction) {
  return Op("central_crop", [fraction](Tensor in, ComponentContext&) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    return ops::CentralCrop(in, fraction);
  });
}

ComponentOp RandomCropOp(std::vector<int64_t> size) {
  const Shape s(size);
  return Op(
      "random_crop",
      [s](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_RETURN_IF_ERROR(CheckImage(in));
        return ops::RandomCrop(in, s, ctx.rng());
      },
      std::nullopt, /*random=*/true);
}

ComponentOp RandomResizedCropOp(int64_t height, int64_t width, std::vector<double> scale,
                                std::vector<double> ratio, const std::string& method,
                                bool antialias) {
  ops::RandomResizedCropOptions o;
  o.scale = Pair(scale, "scale");
  o.ratio = Pair(ratio, "ratio");
  o.method = Method(method);
  o.antialias = antialias;
  const ImageSize size = Size(height, width);
  return Op(
      "random_resized_crop",
      [o, size](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_RETURN_IF_ERROR(CheckImage(in));
        return ops::RandomResizedCrop(in, size, ctx.rng(), o);
      },
      std::nullopt, /*random=*/true);
}

ComponentOp FlipOp(bool left_right) {
  return Op(left_right ? "flip_left_right" : "flip_up_down",
            [left_right](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
              SLUICE_RETURN_IF_ERROR(CheckImage(in));
              const int rank = in.shape().rank();
              if (rank != 3 && rank != 4) {
                return left_right ? ops::FlipLeftRight(in) : ops::FlipUpDown(in);  // its error
              }
              SLUICE_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(in.dtype(), in.shape()));
              SLUICE_RETURN_IF_ERROR(left_right ? ops::FlipLeftRightInto(in, &out)
                                                : ops::FlipUpDownInto(in, &out));
              return out;
            });
}

ComponentOp RandomFlipOp(bool left_right) {
  return Op(
      left_right ? "random_flip_left_right" : "random_flip_up_down",
      [left_right](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_RETURN_IF_ERROR(CheckImage(in));
        // In place when nothing else shares the bytes.
        return left_right ? ops::RandomFlipLeftRight(std::move(in), ctx.rng())
                          : ops::RandomFlipUpDown(std::move(in), ctx.rng());
      },
      std::nullopt, /*random=*/true);
}

ComponentOp Rot90Op(int64_t k) {
  return Op("rot90", [k](Tensor in, ComponentContext&) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    return ops::Rot90(in, k);
  });
}

// ---- Values ---------------------------------------------------------------------

ComponentOp ConvertImageDtypeOp(const std::string& dtype_name, bool saturate) {
  const DType dtype = Unwrap(DTypeFromName(dtype_name));
  return Op("convert_image_dtype",
            [dtype, saturate](Tensor in, ComponentContext&) -> Result<Tensor> {
              SLUICE_RETURN_IF_ERROR(CheckImage(in));
              return ops::ConvertImageDtype(in, dtype, saturate);
            });
}

ComponentOp PerImageStandardizationOp() {
  return Op("per_image_standardization", [](Tensor in, ComponentContext&) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    return ops::PerImageStandardization(in);
  });
}

ComponentOp NormalizeOp(std::vector<float> mean, std::vector<float> stddev) {
  auto m = std::make_shared<const std::vector<float>>(std::move(mean));
  auto s = std::make_shared<const std::vector<float>>(std::move(stddev));
  return Op("normalize", [m, s](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
    SLUICE_RETURN_IF_ERROR(CheckImage(in));
    if (in.dtype() == DType::kFloat32) {
      return ops::Normalize(std::move(in), *m, *s);  // in place when unshared
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DType::kFloat32, in.shape()));
    SLUICE_RETURN_IF_ERROR(ops::NormalizeInto(in, *m, *s, &out));
    return out;
  });
}

// ---- The fused decode-crop-resize ---------------------------------------------

std::shared_ptr<const ops::DecodeCropResizeOptions> FusedOptions(
    int64_t height, int64_t width, std::vector<double> scale, std::vector<double> ratio,
    int channels, const std::string& method, const std::string& dct_method, bool fused,
    const std::string& mirror, std::vector<float> mean, std::vector<float> stddev,
    int64_t max_pixels) {
  ops::DecodeCropResizeOptions o;
  o.size = Size(height, width);
  o.scale = Pair(scale, "scale");
  o.ratio = Pair(ratio, "ratio");
  o.channels = channels;
  o.method = Method(method);
  o.dct_method = DctMethod(dct_method);
  o.fused = fused;
  o.mirror = MirrorFrom(mirror);
  o.mean = std::move(mean);
  o.stddev = std::move(stddev);
  o.max_pixels = max_pixels;
  return std::make_shared<const ops::DecodeCropResizeOptions>(std::move(o));
}

Shape FusedShape(const ops::DecodeCropResizeOptions& o) {
  return Shape{o.size.height, o.size.width, o.channels};
}
DType FusedDType(const ops::DecodeCropResizeOptions& o) {
  return o.method == ResizeMethod::kNearest ? DType::kUInt8 : DType::kFloat32;
}

ComponentOp DecodeRandomCropResizeOp(int64_t height, int64_t width, std::vector<double> scale,
                                     std::vector<double> ratio, int channels,
                                     const std::string& method, const std::string& dct_method,
                                     bool fused, const std::string& mirror, std::vector<float> mean,
                                     std::vector<float> stddev, int64_t max_pixels) {
  auto o = FusedOptions(height, width, std::move(scale), std::move(ratio), channels, method,
                        dct_method, fused, mirror, std::move(mean), std::move(stddev), max_pixels);
  return Op(
      "decode_random_crop_resize",
      [o](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(std::string_view bytes, EncodedBytes(in));
        // The image's row of its batch under map-and-batch fusion.
        SLUICE_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(FusedDType(*o), FusedShape(*o)));
        SLUICE_RETURN_IF_ERROR(ops::DecodeRandomCropResizeInto(bytes, ctx.rng(), *o, &out));
        return out;
      },
      DType::kString, /*random=*/true);
}

ComponentOp DecodeCropResizeOp(std::vector<int64_t> window, int64_t height, int64_t width,
                               int channels, const std::string& method,
                               const std::string& dct_method, bool fused, const std::string& mirror,
                               std::vector<float> mean, std::vector<float> stddev,
                               int64_t max_pixels) {
  const CropWindow w = Window(window);
  auto o = FusedOptions(height, width, {0.08, 1.0}, {3.0 / 4.0, 4.0 / 3.0}, channels, method,
                        dct_method, fused, mirror, std::move(mean), std::move(stddev), max_pixels);
  return Op(
      "decode_crop_resize",
      [o, w](Tensor in, ComponentContext& ctx) -> Result<Tensor> {
        SLUICE_ASSIGN_OR_RETURN(std::string_view bytes, EncodedBytes(in));
        SLUICE_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(FusedDType(*o), FusedShape(*o)));
        SLUICE_RETURN_IF_ERROR(ops::DecodeCropResizeInto(bytes, w, *o, &out));
        return out;
      },
      DType::kString);
}

}  // namespace

void RegisterImage(nb::module_& m) {
  RegisterComponentOp(m);  // sluice.io's ops are ComponentOps too
  nb::module_ img = m.def_submodule("image_ops", "The image ops' factories (sluice.image)");
  img.def("decode_jpeg", &DecodeJpegOp);
  img.def("decode_and_crop_jpeg", &DecodeAndCropJpegOp);
  img.def("decode_png", &DecodePngOp);
  img.def("decode_image", &DecodeImageOp);
  img.def("extract_jpeg_shape", &ExtractJpegShapeOp);
  img.def("encode_jpeg", &EncodeJpegOp);
  img.def("encode_png", &EncodePngOp);
  img.def("resize", &ResizeOp);
  img.def("crop_to_bounding_box", &CropToBoundingBoxOp);
  img.def("central_crop", &CentralCropOp);
  img.def("random_crop", &RandomCropOp);
  img.def("random_resized_crop", &RandomResizedCropOp);
  img.def("flip", &FlipOp);
  img.def("random_flip", &RandomFlipOp);
  img.def("rot90", &Rot90Op);
  img.def("convert_image_dtype", &ConvertImageDtypeOp);
  img.def("per_image_standardization", &PerImageStandardizationOp);
  img.def("normalize", &NormalizeOp);
  img.def("decode_random_crop_resize", &DecodeRandomCropResizeOp);
  img.def("decode_crop_resize", &DecodeCropResizeOp);
}

}  // namespace sluice::python
