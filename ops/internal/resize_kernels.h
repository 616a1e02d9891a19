// The resampling loops behind ops::Resize, over a strided view of one image
// or a batch, writing a dense [batch, out_h, out_w, channels] output. Each
// loop precomputes nothing itself: it takes per-axis taps from
// resize_taps.h. Internal; no threads, no shared state (thread-safe).
#ifndef SLUICE_OPS_INTERNAL_RESIZE_KERNELS_H_
#define SLUICE_OPS_INTERNAL_RESIZE_KERNELS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "sluice/core/dtype.h"
#include "sluice/core/status.h"
#include "sluice/ops/internal/bilinear_rgb8.h"
#include "sluice/ops/internal/resize_taps.h"
#include "sluice/ops/resize.h"

namespace sluice::ops_internal {

// Pixels of `batch` images of dtype `dtype`: element (b, y, x, c) is at
// data + (b * image_stride + y * row_stride + x * channels + c) elements.
// A crop window of a larger image is a view with a row_stride wider than
// width * channels.
struct ImageView {
  const void* data = nullptr;
  DType dtype = DType::kUInt8;
  int64_t batch = 1;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  int64_t row_stride = 0;
  int64_t image_stride = 0;
};

// Copies the pixel (ys[y], xs[x]) to output (y, x); `out` has the view's
// dtype. Works for any numeric dtype.
void ResizeNearest(const ImageView& in, const std::vector<int32_t>& ys,
                   const std::vector<int32_t>& xs, void* out);

// Horizontal lerp of the needed input rows (each computed once), then a
// vertical lerp of two of them: TF's resize_bilinear arithmetic exactly.
void ResizeBilinear(const ImageView& in, const LerpTaps& ys, const LerpTaps& xs, float* out);

// Weighted sums, vertical pass first (a float row of the input's width per
// output row), then horizontal: the order of TF's scale_and_translate and
// resize_bicubic.
void ResizeVerticalFirst(const ImageView& in, const AxisTaps& ys, const AxisTaps& xs, float* out);

// Weighted sums, horizontal pass first (each needed input row once), then
// vertical, then times `post_scale`: the order of TF's resize_area.
// REQUIRES: ys's spans are non-decreasing and overlap by at most one row (as
// AreaTaps' do); otherwise rows are recomputed, still correctly.
void ResizeHorizontalFirst(const ImageView& in, const AxisTaps& ys, const AxisTaps& xs,
                           float post_scale, float* out);

// ResizeBilinear of a uint8 image with 1 or 3 channels, fed one input row at
// a time, in order, so that the input is never held whole (a decoder's rows,
// band by band): each input row an output row needs is resampled
// horizontally when it arrives, and each output row can be taken as soon as
// both its input rows have arrived. The same arithmetic as ResizeBilinear,
// hence the same bits. Holds two resampled rows. Not thread-safe; not
// copyable (the RGB plan points into the taps).
class BilinearRowStream {
 public:
  // REQUIRES: channels is 1 or 3; ys and xs are BilinearTaps-shaped (as
  // RgbLerpPlan requires) over in_height rows and in_width columns.
  BilinearRowStream(int64_t in_width, int64_t channels, LerpTaps ys, LerpTaps xs);
  BilinearRowStream(const BilinearRowStream&) = delete;
  BilinearRowStream& operator=(const BilinearRowStream&) = delete;

  // Input row `r`, `in_width` pixels at src. REQUIRES: r is one more than
  // the previous call's (the first is 0).
  void Push(int64_t r, const uint8_t* src);
  // True if the next output row's input rows have both arrived.
  bool Ready() const {
    return next_ < out_height_ && ys_.upper[static_cast<size_t>(next_)] <= last_;
  }
  // Writes the next output row (out_width * channels floats) to dst and
  // returns its index. REQUIRES: Ready().
  int64_t Take(float* dst);
  int64_t out_height() const { return out_height_; }
  int64_t taken() const { return next_; }  // output rows taken so far
  int64_t row_floats() const { return len_; }

 private:
  float* Slot(int64_t r) { return rows_.data() + (r & 1) * stride_; }

  int64_t in_width_, channels_, out_height_, len_, stride_;
  LerpTaps ys_, xs_;
  RgbLerpPlan rgb_;
  std::vector<float> rows_;  // two resampled rows; row r in slot r % 2
  int64_t last_ = -1;        // the last input row pushed
  int64_t next_ = 0;         // the next output row to take
};

// Converts every element to float (TF's shortcut for a same-size bilinear
// resize).
void CastToFloat(const ImageView& in, float* out);

// Resizes `in` to out_height x out_width with `options` (whose
// preserve_aspect_ratio is ignored) into `out`: dense, of
// ResizeOutputDType(in.dtype, options.method). Defined in resize.cc.
// REQUIRES: sizes validated as ResizeOutputShape() does.
void ResizeView(const ImageView& in, int64_t out_height, int64_t out_width,
                const ops::ResizeOptions& options, void* out);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_RESIZE_KERNELS_H_
