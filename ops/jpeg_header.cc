// ReadJpegHeader and the DCT-scale helpers of jpeg.h.
#include "sluice/ops/internal/jpeg_lib.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops {
namespace {

using ops_internal::JpegDecompressor;

struct HeaderArgs {
  j_decompress_ptr cinfo;
  int result;
};

void ReadHeader(void* p) {
  auto* a = static_cast<HeaderArgs*>(p);
  a->result = jpeg_read_header(a->cinfo, TRUE);
}

JpegColorSpace ColorSpaceOf(J_COLOR_SPACE space) {
  switch (space) {
    case JCS_GRAYSCALE: return JpegColorSpace::kGrayscale;
    case JCS_YCbCr: return JpegColorSpace::kYCbCr;
    case JCS_RGB: return JpegColorSpace::kRGB;
    case JCS_CMYK: return JpegColorSpace::kCMYK;
    case JCS_YCCK: return JpegColorSpace::kYCCK;
    default: return JpegColorSpace::kUnknown;
  }
}

JpegSubsampling SubsamplingOf(const jpeg_decompress_struct& cinfo) {
  if (cinfo.num_components == 1) return JpegSubsampling::kGray;
  if (cinfo.num_components != 3) return JpegSubsampling::kOther;
  const jpeg_component_info* c = cinfo.comp_info;
  if (c[1].h_samp_factor != c[2].h_samp_factor || c[1].v_samp_factor != c[2].v_samp_factor ||
      c[0].h_samp_factor % c[1].h_samp_factor != 0 ||
      c[0].v_samp_factor % c[1].v_samp_factor != 0) {
    return JpegSubsampling::kOther;
  }
  const int h = c[0].h_samp_factor / c[1].h_samp_factor;
  const int v = c[0].v_samp_factor / c[1].v_samp_factor;
  if (h == 1 && v == 1) return JpegSubsampling::k444;
  if (h == 2 && v == 1) return JpegSubsampling::k422;
  if (h == 2 && v == 2) return JpegSubsampling::k420;
  if (h == 1 && v == 2) return JpegSubsampling::k440;
  if (h == 4 && v == 1) return JpegSubsampling::k411;
  return JpegSubsampling::kOther;
}

}  // namespace

}  // namespace sluice::ops

namespace sluice::ops_internal {

Result<ops::JpegHeader> ReadJpegHeaderAt(std::string_view bytes, const std::string& where) {
  if (bytes.empty()) return Status::InvalidArgument(where + ": empty input");
  SLUICE_ASSIGN_OR_RETURN(JpegDecompressor * d, ThreadJpegDecompressor());
  BeginJpegDecode(d, bytes, /*recover=*/false, JpegWarnings::kIgnore,
                  /*max_memory=*/64 << 20);
  struct End {
    JpegDecompressor* d;
    ~End() { EndJpegDecode(d); }
  } end{d};
  ops::HeaderArgs args{&d->cinfo, 0};
  if (!JpegCall(&d->err, ops::ReadHeader, &args)) {
    return JpegError(d->err, where);
  }
  if (args.result != JPEG_HEADER_OK) {
    return Status::InvalidArgument(where + ": the data ends before the first scan (truncated)");
  }
  const jpeg_decompress_struct& c = d->cinfo;
  ops::JpegHeader h;
  h.width = c.image_width;
  h.height = c.image_height;
  h.components = c.num_components;
  h.color_space = ops::ColorSpaceOf(c.jpeg_color_space);
  h.subsampling = ops::SubsamplingOf(c);
  h.progressive = c.progressive_mode != 0;
  h.arithmetic = c.arith_code != 0;
  return h;
}

}  // namespace sluice::ops_internal

namespace sluice::ops {

Result<JpegHeader> ReadJpegHeader(std::string_view bytes, std::string_view name) {
  return ops_internal::ReadJpegHeaderAt(
      bytes, ops_internal::JpegWhere("read_jpeg_header", name, bytes.size()));
}

int JpegScaleDenominator(int64_t width, int64_t height, int64_t min_width, int64_t min_height) {
  for (int denominator : {8, 4, 2}) {
    if (JpegScaledSize(width, denominator) >= min_width &&
        JpegScaledSize(height, denominator) >= min_height) {
      return denominator;
    }
  }
  return 1;
}

int64_t JpegScaledSize(int64_t size, int denominator) {
  return (size + denominator - 1) / denominator;
}

}  // namespace sluice::ops
