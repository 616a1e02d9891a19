// EncodeJpeg: libjpeg's compressor set up exactly as tf.io.encode_jpeg sets
// it up (jpeg_set_defaults, 300 dpi JFIF density, jpeg_set_quality with
// baseline tables, optional simple progression and 4:4:4), so that the same
// image and options give the same bytes.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "sluice/ops/internal/jpeg_lib.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops {
namespace {

using ops_internal::JpegCall;
using ops_internal::JpegErrorManager;

struct EncodeArgs {
  jpeg_compress_struct* cinfo;
  const EncodeJpegOptions* options;
  const uint8_t* pixels;
  size_t stride;
};

void Encode(void* p) {
  auto* a = static_cast<EncodeArgs*>(p);
  j_compress_ptr cinfo = a->cinfo;
  jpeg_set_defaults(cinfo);
  cinfo->optimize_coding = a->options->optimize_size ? TRUE : FALSE;
  cinfo->density_unit = 1;  // dots per inch, tf.io.encode_jpeg's default
  cinfo->X_density = 300;
  cinfo->Y_density = 300;
  jpeg_set_quality(cinfo, a->options->quality, TRUE);
  if (a->options->progressive) jpeg_simple_progression(cinfo);
  if (!a->options->chroma_downsampling) {
    for (int i = 0; i < cinfo->num_components; ++i) {
      cinfo->comp_info[i].h_samp_factor = 1;
      cinfo->comp_info[i].v_samp_factor = 1;
    }
  }
  if (a->options->restart_interval > 0) {
    int max_h = 1;
    for (int i = 0; i < cinfo->num_components; ++i) {
      max_h = std::max(max_h, cinfo->comp_info[i].h_samp_factor);
    }
    const int64_t mcu_width = 8 * int64_t{max_h};
    cinfo->restart_interval = static_cast<unsigned int>(JpegRestartInterval(
        (cinfo->image_width + mcu_width - 1) / mcu_width, a->options->restart_interval));
  }
  jpeg_start_compress(cinfo, TRUE);
  JSAMPROW rows[32];
  while (cinfo->next_scanline < cinfo->image_height) {
    JDIMENSION n = 0;
    for (; n < 32 && cinfo->next_scanline + n < cinfo->image_height; ++n) {
      rows[n] = const_cast<JSAMPROW>(a->pixels + (cinfo->next_scanline + n) * a->stride);
    }
    jpeg_write_scanlines(cinfo, rows, n);
  }
  jpeg_finish_compress(cinfo);
}

void Create(void* p) { jpeg_create_compress(static_cast<jpeg_compress_struct*>(p)); }

}  // namespace

int JpegRestartInterval(int64_t mcus_per_row, int wanted) {
  if (wanted >= mcus_per_row) return static_cast<int>(wanted / mcus_per_row * mcus_per_row);
  for (int64_t n = std::min<int64_t>(wanted, mcus_per_row); n > 1; --n) {
    if (mcus_per_row % n == 0) return static_cast<int>(n);
  }
  return 1;
}

Result<std::string> EncodeJpeg(const Tensor& image, const EncodeJpegOptions& options) {
  const std::string where = "encode_jpeg";
  const Shape& shape = image.shape();
  if (image.dtype() != DType::kUInt8 || shape.rank() != 3 ||
      (shape.dim(2) != 1 && shape.dim(2) != 3)) {
    return Status::InvalidArgument(where + ": image must be uint8 [height, width, 1 or 3], got " +
                                   std::string(DTypeName(image.dtype())) + shape.ToString());
  }
  if (shape.dim(0) < 1 || shape.dim(1) < 1 || shape.dim(0) > JPEG_MAX_DIMENSION ||
      shape.dim(1) > JPEG_MAX_DIMENSION) {
    return Status::InvalidArgument(where + ": image " + shape.ToString() +
                                   " must have sides from 1 to 65500");
  }
  if (options.restart_interval < 0 || options.restart_interval > 65535) {
    return Status::InvalidArgument(where + ": restart_interval must be in [0, 65535], got " +
                                   std::to_string(options.restart_interval));
  }
  if (options.quality < 0 || options.quality > 100) {
    return Status::InvalidArgument(where + ": quality must be in [0, 100], got " +
                                   std::to_string(options.quality));
  }
  const int channels = static_cast<int>(shape.dim(2));
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  ops_internal::JpegMemoryDestination dest;
  ops_internal::InstallJpegErrorManager(reinterpret_cast<j_common_ptr>(&cinfo), &err);
  if (!JpegCall(&err, Create, &cinfo)) {
    return Status::ResourceExhausted(where +
                                     ": cannot create a libjpeg compressor: " + err.message);
  }
  struct Cleanup {
    jpeg_compress_struct* cinfo;
    ops_internal::JpegMemoryDestination* dest;
    ~Cleanup() {
      jpeg_destroy_compress(cinfo);
      std::free(dest->data);
    }
  } cleanup{&cinfo, &dest};
  const size_t raw = static_cast<size_t>(image.byte_size());
  ops_internal::InstallJpegMemoryDestination(&cinfo, &dest,
                                             std::min<size_t>(raw / 4 + 4096, size_t{1} << 20));
  cinfo.image_width = static_cast<JDIMENSION>(shape.dim(1));
  cinfo.image_height = static_cast<JDIMENSION>(shape.dim(0));
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  EncodeArgs args{&cinfo, &options, static_cast<const uint8_t*>(image.raw_data()),
                  static_cast<size_t>(shape.dim(1)) * channels};
  if (!JpegCall(&err, Encode, &args)) return ops_internal::JpegError(err, where);
  return std::string(reinterpret_cast<const char*>(dest.data), dest.size);
}

}  // namespace sluice::ops
