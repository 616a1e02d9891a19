// DecodePng, DecodePngInto, PngOutputShape and ReadPngHeader on libspng.
//
// libspng decodes to the PNG's own layout (or RGB(A)8 for palettes, G8 for
// gray below 8 bits); when that is already the requested layout it writes
// straight into the output, else into a scratch buffer that
// ConvertPngSamples() turns into the requested channels and depth.
#include <spng.h>

#include <algorithm>
#include <limits>

#include "sluice/core/buffer.h"
#include "sluice/ops/internal/png_convert.h"
#include "sluice/ops/png.h"

namespace sluice::ops {
namespace {

// Ancillary chunks libspng keeps in memory (text, ICC profile, EXIF...).
constexpr size_t kChunkCacheLimit = size_t{8} << 20;

std::string Where(std::string_view op, std::string_view name, size_t size) {
  std::string where(op);
  where += ": ";
  if (name.empty()) return where + "<" + std::to_string(size) + "-byte input>";
  return where.append(name);
}

Status SpngError(int err, const std::string& where) {
  std::string msg = where + ": " + spng_strerror(err);
  switch (err) {
    case SPNG_EMEM:
    case SPNG_EUSER_WIDTH:
    case SPNG_EUSER_HEIGHT:
    case SPNG_ECHUNK_LIMITS: return Status::ResourceExhausted(msg);
    case SPNG_IO_EOF: return Status::InvalidArgument(msg + " (truncated)");
    default: return Status::InvalidArgument(msg);
  }
}

// One libspng decoder over `bytes`, header read.
struct Png {
  spng_ctx* ctx = nullptr;
  std::string where;
  spng_ihdr ihdr{};
  bool has_trns = false;
  spng_trns trns{};
  int default_channels = 0;
  ~Png() { spng_ctx_free(ctx); }
};

Status Open(std::string_view bytes, std::string_view op, std::string_view name, int64_t max_pixels,
            Png* png) {
  png->where = Where(op, name, bytes.size());
  if (bytes.empty()) return Status::InvalidArgument(png->where + ": empty input");
  if (max_pixels <= 0) return Status::InvalidArgument(png->where + ": max_pixels must be > 0");
  png->ctx = spng_ctx_new(0);
  if (png->ctx == nullptr) {
    return Status::ResourceExhausted(png->where + ": cannot create a libspng context");
  }
  // Like libpng: a bad CRC is an error in critical chunks; in ancillary
  // chunks the chunk is dropped.
  spng_set_crc_action(png->ctx, SPNG_CRC_ERROR, SPNG_CRC_DISCARD);
  const int64_t side =
      std::min<int64_t>(max_pixels, std::numeric_limits<int32_t>::max());  // PNG's own limit
  spng_set_image_limits(png->ctx, static_cast<uint32_t>(side), static_cast<uint32_t>(side));
  spng_set_chunk_limits(png->ctx,
                        std::min<size_t>(bytes.size(), std::numeric_limits<int32_t>::max()),
                        kChunkCacheLimit);
  int err = spng_set_png_buffer(png->ctx, bytes.data(), bytes.size());
  if (err == 0) err = spng_get_ihdr(png->ctx, &png->ihdr);
  if (err != 0) return SpngError(err, png->where);
  const int64_t pixels = int64_t{png->ihdr.width} * png->ihdr.height;
  if (pixels > max_pixels) {
    return Status::ResourceExhausted(png->where + ": the image is " +
                                     std::to_string(png->ihdr.width) + "x" +
                                     std::to_string(png->ihdr.height) + ", more than max_pixels (" +
                                     std::to_string(max_pixels) + ")");
  }
  err = spng_get_trns(png->ctx, &png->trns);
  if (err == 0) {
    png->has_trns = true;
  } else if (err != SPNG_ECHUNKAVAIL) {
    return SpngError(err, png->where);
  }
  switch (png->ihdr.color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE: png->default_channels = 1; break;
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA: png->default_channels = 2; break;
    case SPNG_COLOR_TYPE_TRUECOLOR: png->default_channels = 3; break;
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA: png->default_channels = 4; break;
    default: png->default_channels = png->has_trns ? 4 : 3; break;  // palette
  }
  return Status::OK();
}

Status CheckOptions(const DecodePngOptions& o, const std::string& where) {
  if (o.channels != 0 && o.channels != 1 && o.channels != 3 && o.channels != 4) {
    return Status::InvalidArgument(where + ": channels must be 0, 1, 3 or 4, got " +
                                   std::to_string(o.channels));
  }
  if (o.bits != 8 && o.bits != 16) {
    return Status::InvalidArgument(where + ": bits must be 8 or 16, got " + std::to_string(o.bits));
  }
  return Status::OK();
}

Shape OutputShape(const Png& png, const DecodePngOptions& o) {
  return Shape{png.ihdr.height, png.ihdr.width, o.channels ? o.channels : png.default_channels};
}

Status Decode(Png* png, const DecodePngOptions& o, Tensor* out) {
  const int out_channels = static_cast<int>(out->shape().dim(2));
  const bool want_alpha = out_channels == 2 || out_channels == 4;
  const int color_type = png->ihdr.color_type;
  const int bit_depth = png->ihdr.bit_depth;
  ops_internal::PngSamples src;
  src.pixels = static_cast<size_t>(png->ihdr.width) * png->ihdr.height;
  int fmt = SPNG_FMT_PNG;
  int flags = 0;
  if (color_type == SPNG_COLOR_TYPE_INDEXED) {
    const bool alpha = want_alpha && png->has_trns;
    fmt = alpha ? SPNG_FMT_RGBA8 : SPNG_FMT_RGB8;
    flags = alpha ? SPNG_DECODE_TRNS : 0;
    src.channels = alpha ? 4 : 3;
  } else {
    src.channels = color_type == SPNG_COLOR_TYPE_GRAYSCALE         ? 1
                   : color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ? 2
                   : color_type == SPNG_COLOR_TYPE_TRUECOLOR       ? 3
                                                                   : 4;
    src.depth = bit_depth == 16 ? 16 : 8;
    // Gray below 8 bits comes out scaled to 0..255 (1 bit: 0/255), as
    // libpng's png_set_expand_gray_1_2_4_to_8; so must the tRNS key.
    const uint16_t key_scale = bit_depth < 8 ? 255 / ((1 << bit_depth) - 1) : 1;
    if (bit_depth < 8) fmt = SPNG_FMT_G8;
    if (png->has_trns && want_alpha && (src.channels == 1 || src.channels == 3)) {
      src.has_key = true;
      if (src.channels == 1) {
        src.key[0] = static_cast<uint16_t>(png->trns.gray * key_scale);
      } else {
        src.key[0] = png->trns.red;
        src.key[1] = png->trns.green;
        src.key[2] = png->trns.blue;
      }
    }
  }
  // TF (libpng) converts color to gray in linear light when the file
  // declares a gamma; sRGB means 1/2.2 and wins over gAMA.
  ops_internal::PngGrayGamma gamma;
  if (out_channels < 3 && src.channels >= 3) {
    uint32_t file_gamma = 0;
    uint8_t intent = 0;
    if (spng_get_srgb(png->ctx, &intent) == 0) {
      file_gamma = 45455;
    } else if (spng_get_gama_int(png->ctx, &file_gamma) != 0) {
      file_gamma = 0;
    }
    spng_sbit sbit{};
    int significant = 0;
    if (spng_get_sbit(png->ctx, &sbit) == 0 && color_type != SPNG_COLOR_TYPE_INDEXED) {
      significant = std::max({sbit.red_bits, sbit.green_bits, sbit.blue_bits});
    }
    if (ops_internal::MakePngGrayGamma(file_gamma, src.depth, o.bits, significant, &gamma)) {
      src.gamma = &gamma;
    }
  }
  size_t size = 0;
  int err = spng_decoded_image_size(png->ctx, fmt, &size);
  if (err != 0) return SpngError(err, png->where);
  const bool direct = o.bits == 8 && src.depth == 8 && src.channels == out_channels && !src.has_key;
  if (direct && size == out->byte_size()) {
    err = spng_decode_image(png->ctx, out->raw_data(), size, fmt, flags);
    return err == 0 ? Status::OK() : SpngError(err, png->where);
  }
  if (size != src.pixels * src.channels * (src.depth / 8)) {
    return Status::Internal(png->where + ": libspng's decoded size " + std::to_string(size) +
                            " does not match the image");
  }
  // Uninitialized and 64-byte aligned (16-bit samples need 2).
  Result<Buffer> scratch = Buffer::Allocate(size);
  if (!scratch.ok()) return scratch.status().WithContext(png->where);
  err = spng_decode_image(png->ctx, scratch->data(), size, fmt, flags);
  if (err != 0) return SpngError(err, png->where);
  src.data = scratch->data();
  ops_internal::ConvertPngSamples(src, out_channels, o.bits, out->raw_data());
  return Status::OK();
}

Status DecodeTo(std::string_view bytes, const DecodePngOptions& o, Tensor* out, bool allocate) {
  Png png;
  const std::string where = Where("decode_png", o.name, bytes.size());
  SLUICE_RETURN_IF_ERROR(CheckOptions(o, where));
  SLUICE_RETURN_IF_ERROR(Open(bytes, "decode_png", o.name, o.max_pixels, &png));
  const Shape shape = OutputShape(png, o);
  const DType dtype = o.bits == 8 ? DType::kUInt8 : DType::kInt32;
  if (allocate) {
    SLUICE_ASSIGN_OR_RETURN(*out, Tensor::Allocate(dtype, shape));
  } else if (out->dtype() != dtype || out->shape() != shape) {
    return Status::InvalidArgument(where + ": the output tensor is " +
                                   std::string(DTypeName(out->dtype())) + out->shape().ToString() +
                                   ", the image needs " + std::string(DTypeName(dtype)) +
                                   shape.ToString());
  }
  return Decode(&png, o, out);
}

}  // namespace

Result<PngHeader> ReadPngHeader(std::string_view bytes, std::string_view name) {
  Png png;
  SLUICE_RETURN_IF_ERROR(
      Open(bytes, "read_png_header", name, std::numeric_limits<int64_t>::max(), &png));
  PngHeader h;
  h.width = png.ihdr.width;
  h.height = png.ihdr.height;
  h.color_type = static_cast<PngColorType>(png.ihdr.color_type);
  h.bit_depth = png.ihdr.bit_depth;
  h.channels = png.default_channels;
  h.interlaced = png.ihdr.interlace_method != 0;
  h.has_trns = png.has_trns;
  return h;
}

Result<Shape> PngOutputShape(std::string_view bytes, const DecodePngOptions& options) {
  Png png;
  SLUICE_RETURN_IF_ERROR(
      CheckOptions(options, Where("png_output_shape", options.name, bytes.size())));
  SLUICE_RETURN_IF_ERROR(Open(bytes, "png_output_shape", options.name, options.max_pixels, &png));
  return OutputShape(png, options);
}

Result<Tensor> DecodePng(std::string_view bytes, const DecodePngOptions& options) {
  Tensor out;
  SLUICE_RETURN_IF_ERROR(DecodeTo(bytes, options, &out, /*allocate=*/true));
  return out;
}

Status DecodePngInto(std::string_view bytes, const DecodePngOptions& options, Tensor* out) {
  return DecodeTo(bytes, options, out, /*allocate=*/false);
}

}  // namespace sluice::ops
