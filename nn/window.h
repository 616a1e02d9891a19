// Window2D: the geometry of a 2-D convolution or pooling window, and the
// output shapes TensorFlow gives it.
//
// Padding follows TensorFlow: "valid" uses only full windows,
// out = ceil((in - k + 1) / stride); "same" gives out = ceil(in / stride)
// and pads pad_total = max((out - 1) · stride + k - in, 0) split with the
// smaller half first (top/left), the larger last (bottom/right).
//
// Thread-safety: plain values and pure functions.
#ifndef SLUICE_NN_WINDOW_H_
#define SLUICE_NN_WINDOW_H_

#include <cstdint>
#include <string_view>

#include "sluice/core/result.h"
#include "sluice/core/shape.h"

namespace sluice::nn {

enum class Padding { kValid, kSame };
// "valid" / "same" (case-insensitive). InvalidArgument otherwise.
Result<Padding> ParsePadding(std::string_view text);

enum class PoolMode { kMax, kAverage };

struct Window2D {
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  Padding padding = Padding::kValid;
};

// Output size and padding along one spatial dimension.
struct WindowDim {
  int64_t out = 0;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};
// InvalidArgument if the window does not fit (valid padding, in < k) or a
// size is not positive.
Result<WindowDim> ComputeWindowDim(int64_t in, int kernel, int stride, Padding padding);

// [n, oh, ow, filter_out] for x [n, h, w, c] and an HWIO filter
// [kh, kw, c, out] (the window's kernel size must match the filter's).
Result<Shape> Conv2DOutputShape(const Shape& x, const Shape& filter, const Window2D& window);
// [n, oh, ow, c] for x [n, h, w, c].
Result<Shape> Pool2DOutputShape(const Shape& x, const Window2D& window);

}  // namespace sluice::nn

#endif  // SLUICE_NN_WINDOW_H_
