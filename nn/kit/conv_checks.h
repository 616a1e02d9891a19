// The backend kit (nn/kit/): the argument checks of the convolution and
// pooling methods, shared by every backend (nn/cpu/, nn/cuda/, yours),
// and the checked geometry they return. Plain functions; thread-safe.
//
// Every failure is InvalidArgument in backend_checks.h's form
//   "<Method>: <problem> (<name> cpu:0 float32[...], ...)".
#ifndef SLUICE_NN_KIT_CONV_CHECKS_H_
#define SLUICE_NN_KIT_CONV_CHECKS_H_

#include <compare>
#include <cstdint>

#include "sluice/core/device.h"
#include "sluice/core/device_tensor.h"
#include "sluice/core/result.h"
#include "sluice/nn/kit/backend_checks.h"
#include "sluice/nn/window.h"

namespace sluice::nn::kit {

// A 2-D convolution of x [batch, in_h, in_w, in_c] with an HWIO filter
// [kernel_h, kernel_w, in_c, out_c] into y [batch, out_h, out_w, out_c], or
// a pooling (out_c == in_c). Padding in elements, TensorFlow's split:
// SAME may pad one more after (bottom/right) than before (top/left).
// Output element (oh, ow) reads input rows oh · stride_h - pad_top + [0, kernel_h)
// and columns ow · stride_w - pad_left + [0, kernel_w).
struct ConvGeometry {
  int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;

  bool symmetric_padding() const { return pad_top == pad_bottom && pad_left == pad_right; }
  auto operator<=>(const ConvGeometry&) const = default;
};

// Conv2DForward: x, filter, y of `dtype` (and bias when non-null, which
// must be float32 [out]) on `device`; y of Conv2DOutputShape.
Result<ConvGeometry> CheckConv2DForward(Device device, const DeviceTensor& x,
                                        const DeviceTensor& filter, const DeviceTensor* bias,
                                        const Window2D& window, const DeviceTensor* y,
                                        DType dtype = DType::kFloat32);
// Conv2DBackwardData: dy of the output shape of dx (x's shape) and filter;
// all three of `dtype`.
Result<ConvGeometry> CheckConv2DBackwardData(Device device, const DeviceTensor& dy,
                                             const DeviceTensor& filter, const Window2D& window,
                                             const DeviceTensor* dx, DType dtype = DType::kFloat32);
// Conv2DBackwardFilter: dy of the output shape of x and dfilter (the
// filter's shape); x and dy of `dtype`, dfilter of `dfilter_dtype`; dbias,
// when non-null, float32 [out].
Result<ConvGeometry> CheckConv2DBackwardFilter(Device device, const DeviceTensor& x,
                                               const DeviceTensor& dy, const Window2D& window,
                                               const DeviceTensor* dfilter,
                                               const DeviceTensor* dbias,
                                               DType dtype = DType::kFloat32,
                                               DType dfilter_dtype = DType::kFloat32);

// Pool2DForward: y of Pool2DOutputShape(x); float32 tensors (or each of
// `types`).
Result<ConvGeometry> CheckPool2DForward(Device device, const DeviceTensor& x,
                                        const Window2D& window, const DeviceTensor* y,
                                        FloatTypes types = FloatTypes::kFloat32);
// Pool2DBackward: y of Pool2DOutputShape(x), dy of y's shape, dx of x's;
// float32 tensors (or each of `types`).
Result<ConvGeometry> CheckPool2DBackward(Device device, const DeviceTensor& x,
                                         const DeviceTensor& y, const DeviceTensor& dy,
                                         const Window2D& window, const DeviceTensor* dx,
                                         FloatTypes types = FloatTypes::kFloat32);

}  // namespace sluice::nn::kit

#endif  // SLUICE_NN_KIT_CONV_CHECKS_H_
