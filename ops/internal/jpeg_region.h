// Zero-copy crop decodes and streamed whole decodes for the fused decode +
// crop + resize path.
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
#include <functional>
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

// Rows decoded per band by DecodeJpegRows.
inline constexpr uint32_t kJpegBandRows = 8;
// Receives rows [y, y + n) of the image, row i at rows + i * stride bytes
// (width * channels of them used); valid only during the call.
using JpegRowsFn = std::function<void(int64_t y, int64_t n, const uint8_t* rows, int64_t stride)>;
// DecodeJpeg(bytes, options)'s pixels and errors, every row of the whole
// image, handed to `fn` in order in bands of kJpegBandRows through a buffer
// of that many rows: the decoded image is never held whole, so a consumer
// that resizes as rows arrive works in L1. After an error `fn` may have seen
// some of the rows. REQUIRES: options.ratio / min_width / min_height as
// DecodeJpeg allows (any scale).
Status DecodeJpegRows(std::string_view bytes, const ops::DecodeJpegOptions& options,
                      const JpegRowsFn& fn);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_JPEG_REGION_H_
