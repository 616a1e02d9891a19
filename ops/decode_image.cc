#include "sluice/ops/decode_image.h"

#include <string>

#include "sluice/ops/jpeg.h"
#include "sluice/ops/png.h"

namespace sluice::ops {
namespace {

bool StartsWith(std::string_view bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && bytes.substr(0, magic.size()) == magic;
}

DecodeJpegOptions JpegOptions(const DecodeImageOptions& o) {
  DecodeJpegOptions j;
  j.channels = o.channels;
  j.max_pixels = o.max_pixels;
  j.strict = o.strict;
  j.allow_harmless_warnings = o.allow_harmless_warnings;
  j.name = o.name;
  return j;
}

DecodePngOptions PngOptions(const DecodeImageOptions& o) {
  DecodePngOptions p;
  p.channels = o.channels;
  p.max_pixels = o.max_pixels;
  p.name = o.name;
  return p;
}

// OK if `bytes` is JPEG or PNG and the options suit it; *format says which.
Status Dispatch(std::string_view bytes, const DecodeImageOptions& o, ImageFormat* format) {
  *format = DetectImageFormat(bytes);
  std::string where = "decode_image: ";
  where +=
      o.name.empty() ? "<" + std::to_string(bytes.size()) + "-byte input>" : std::string(o.name);
  if (o.channels != 0 && o.channels != 1 && o.channels != 3 && o.channels != 4) {
    return Status::InvalidArgument(where + ": channels must be 0, 1, 3 or 4, got " +
                                   std::to_string(o.channels));
  }
  switch (*format) {
    case ImageFormat::kJpeg:
      if (o.channels == 4) {
        return Status::InvalidArgument(where + ": JPEG does not support 4 channels");
      }
      return Status::OK();
    case ImageFormat::kPng: return Status::OK();
    case ImageFormat::kUnknown:
      return Status::InvalidArgument(
          where + ": unsupported image format: " +
          (bytes.empty() ? std::string("empty input") : std::string("not JPEG or PNG")));
    default:
      return Status::InvalidArgument(
          where + ": unsupported image format: " + std::string(ImageFormatName(*format)) +
          " (sluice decodes JPEG and PNG)");
  }
}

}  // namespace

ImageFormat DetectImageFormat(std::string_view bytes) {
  using namespace std::string_view_literals;
  if (StartsWith(bytes, "\xFF\xD8\xFF"sv)) return ImageFormat::kJpeg;
  if (StartsWith(bytes, "\x89PNG\r\n\x1A\n"sv)) return ImageFormat::kPng;
  if (StartsWith(bytes, "GIF8"sv)) return ImageFormat::kGif;
  if (StartsWith(bytes, "BM"sv)) return ImageFormat::kBmp;
  if (bytes.size() >= 12 && StartsWith(bytes, "RIFF"sv) && bytes.substr(8, 4) == "WEBP"sv) {
    return ImageFormat::kWebp;
  }
  return ImageFormat::kUnknown;
}

std::string_view ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kGif: return "GIF";
    case ImageFormat::kBmp: return "BMP";
    case ImageFormat::kWebp: return "WebP";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

Result<Tensor> DecodeImage(std::string_view bytes, const DecodeImageOptions& options) {
  ImageFormat format;
  SLUICE_RETURN_IF_ERROR(Dispatch(bytes, options, &format));
  if (format == ImageFormat::kJpeg) return DecodeJpeg(bytes, JpegOptions(options));
  return DecodePng(bytes, PngOptions(options));
}

Result<Shape> ImageOutputShape(std::string_view bytes, const DecodeImageOptions& options) {
  ImageFormat format;
  SLUICE_RETURN_IF_ERROR(Dispatch(bytes, options, &format));
  if (format == ImageFormat::kJpeg) return JpegOutputShape(bytes, JpegOptions(options));
  return PngOutputShape(bytes, PngOptions(options));
}

Status DecodeImageInto(std::string_view bytes, const DecodeImageOptions& options, Tensor* out) {
  ImageFormat format;
  SLUICE_RETURN_IF_ERROR(Dispatch(bytes, options, &format));
  if (format == ImageFormat::kJpeg) return DecodeJpegInto(bytes, JpegOptions(options), out);
  return DecodePngInto(bytes, PngOptions(options), out);
}

}  // namespace sluice::ops
