// EncodePng on libspng: one IHDR, the image in SPNG_FMT_PNG layout (16-bit
// samples in host order, which libspng writes big-endian), IEND.
#include <spng.h>

#include <cstdlib>
#include <vector>

#include "sluice/ops/png.h"

namespace sluice::ops {

Result<std::string> EncodePng(const Tensor& image, const EncodePngOptions& options) {
  const std::string where = "encode_png";
  const Shape& shape = image.shape();
  const bool wide = image.dtype() == DType::kInt32;
  if ((image.dtype() != DType::kUInt8 && !wide) || shape.rank() != 3 || shape.dim(2) < 1 ||
      shape.dim(2) > 4) {
    return Status::InvalidArgument(where +
                                   ": image must be uint8 or int32 [height, width, 1..4], got " +
                                   std::string(DTypeName(image.dtype())) + shape.ToString());
  }
  if (shape.dim(0) < 1 || shape.dim(1) < 1 || shape.dim(0) > 0x7fffffff ||
      shape.dim(1) > 0x7fffffff) {
    return Status::InvalidArgument(where + ": image " + shape.ToString() +
                                   " must have sides from 1 to 2^31-1");
  }
  if (options.compression < -1 || options.compression > 9) {
    return Status::InvalidArgument(where + ": compression must be -1 or 0..9, got " +
                                   std::to_string(options.compression));
  }
  const void* pixels = image.raw_data();
  size_t bytes = image.byte_size();
  std::vector<uint16_t> samples;
  if (wide) {
    const auto in = image.flat<int32_t>();
    samples.resize(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] < 0 || in[i] > 65535) {
        return Status::InvalidArgument(where + ": 16-bit sample " + std::to_string(i) + " is " +
                                       std::to_string(in[i]) + ", outside 0..65535");
      }
      samples[i] = static_cast<uint16_t>(in[i]);
    }
    pixels = samples.data();
    bytes = samples.size() * sizeof(uint16_t);
  }
  static constexpr uint8_t kColorTypes[] = {
      SPNG_COLOR_TYPE_GRAYSCALE, SPNG_COLOR_TYPE_GRAYSCALE_ALPHA, SPNG_COLOR_TYPE_TRUECOLOR,
      SPNG_COLOR_TYPE_TRUECOLOR_ALPHA};
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(shape.dim(1));
  ihdr.height = static_cast<uint32_t>(shape.dim(0));
  ihdr.bit_depth = wide ? 16 : 8;
  ihdr.color_type = kColorTypes[shape.dim(2) - 1];
  struct Context {
    spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    ~Context() { spng_ctx_free(ctx); }
  } c;
  if (c.ctx == nullptr)
    return Status::ResourceExhausted(where + ": cannot create a libspng encoder");
  int err = spng_set_option(c.ctx, SPNG_ENCODE_TO_BUFFER, 1);
  if (err == 0) err = spng_set_option(c.ctx, SPNG_IMG_COMPRESSION_LEVEL, options.compression);
  if (err == 0) err = spng_set_ihdr(c.ctx, &ihdr);
  if (err == 0) err = spng_encode_image(c.ctx, pixels, bytes, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  size_t size = 0;
  void* png = nullptr;
  if (err == 0) png = spng_get_png_buffer(c.ctx, &size, &err);
  if (err != 0 || png == nullptr) {
    std::free(png);
    const std::string msg = where + ": " + spng_strerror(err);
    return err == SPNG_EMEM ? Status::ResourceExhausted(msg) : Status::Internal(msg);
  }
  std::string out(static_cast<const char*>(png), size);
  std::free(png);
  return out;
}

}  // namespace sluice::ops
