// Zero-copy crop decodes for the fused decode + crop + resize path.
//
// DecodeAndCropJpeg returns a tensor of exactly the window; to get there the
// decoder reads each row of the columns libjpeg decodes (the window widened
// to iMCU boundaries and a margin) into a scratch row and copies the
// window's part out. DecodeJpegRegion lets libjpeg write those wider rows
// straight into one buffer and returns a strided view of the window in it,
// for a consumer that reads views (the resize kernels). The pixels are those
// of DecodeAndCropJpeg; restart-segment splicing applies the same way.
//
// Thread-safety: as DecodeAndCropJpeg (the calling thread's decompressor).
#ifndef SLUICE_OPS_INTERNAL_JPEG_REGION_H_
#define SLUICE_OPS_INTERNAL_JPEG_REGION_H_

#include <cstdint>
#include <string_view>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/jpeg.h"

namespace sluice::ops_internal {

// A decoded window: pixel (y, x, c) is data[y * row_stride + x * channels + c].
struct JpegRegion {
  Tensor storage;  // owns the rows (uint8, 1-D)
  const uint8_t* data = nullptr;
  int64_t row_stride = 0;  // bytes
  int64_t height = 0, width = 0, channels = 0;
};

// DecodeAndCropJpeg(bytes, window, options) as a view: same pixels, same
// errors. Rows are copied only where they must be converted (CMYK) or where
// whole rows are decoded and dropped (incomplete progressive files).
Status DecodeJpegRegion(std::string_view bytes, const ops::JpegCropWindow& window,
                        const ops::DecodeJpegOptions& options, JpegRegion* out);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_JPEG_REGION_H_
