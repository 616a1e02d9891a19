// Row transfer for the JPEG decoder: reads libjpeg output rows into a tensor,
// directly or through a scratch row that is trimmed (crops) or converted
// (CMYK to RGB or gray). ReadRows runs inside JpegCall(), so it and
// ConvertRow use only plain data.
#ifndef SLUICE_OPS_INTERNAL_JPEG_ROWS_H_
#define SLUICE_OPS_INTERNAL_JPEG_ROWS_H_

#include <cstddef>
#include <cstdint>

#include "sluice/ops/internal/jpeg_lib.h"

namespace sluice::ops_internal {

// Columns decoded beyond each side of a crop window, so that chroma
// upsampling at the window's left and right borders sees the same neighbors
// as in a full decode instead of replicated edge samples. Two makes every
// window of the golden files bit-exact with the full decode; one does not
// (up to 9 levels off). Rows need no margin: jpeg_skip_scanlines keeps the
// upsampler's context rows (measured the same way).
inline constexpr int64_t kJpegCropMargin = 2;

struct RowPlan {
  bool direct = true;           // libjpeg writes the output rows itself
  bool cmyk = false;            // libjpeg outputs CMYK: convert to RGB/gray
  bool adobe_inverted = false;  // the file has an Adobe marker (inverted CMYK)
  int in_channels = 0;          // per decoded pixel
  int out_channels = 0;         // per output pixel
  size_t skip = 0;              // decoded pixels dropped at the left
  size_t width = 0;             // output pixels per row
};

// One decoded row (in_channels per pixel, from pixel `skip`) to one output
// row. CMYK becomes RGB as TensorFlow does it: with an Adobe marker
// (inverted CMYK) r = k*c/255, else r = (255-k)*(255-c)/255 (same for g, b
// with m, y); gray is then libjpeg's luma (0.299, 0.587, 0.114; rounded).
void ConvertRow(const RowPlan& plan, const uint8_t* in, uint8_t* out);

struct ReadRowsArgs {
  j_decompress_ptr cinfo;
  const RowPlan* plan;
  uint8_t* out;       // first output row
  size_t stride;      // bytes per output row
  uint8_t* scratch;   // one decoded row, unless plan->direct
  uint32_t discard;   // rows to read and drop first
  uint32_t rows;      // output rows wanted
  uint32_t done = 0;  // output rows written (fewer if the data ended)
};

// For JpegCall(): reads args->rows rows (stops early if libjpeg suspends).
void ReadRows(void* args);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_JPEG_ROWS_H_
