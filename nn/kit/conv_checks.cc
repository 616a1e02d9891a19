// The convolution and pooling argument checks (conv_checks.h).
#include "sluice/nn/kit/conv_checks.h"

#include <initializer_list>
#include <string>
#include <string_view>

#include "sluice/nn/kit/backend_checks.h"

namespace sluice::nn::kit {
namespace {

constexpr std::string_view kConvForward = "Conv2DForward";
constexpr std::string_view kConvBackwardData = "Conv2DBackwardData";
constexpr std::string_view kConvBackwardFilter = "Conv2DBackwardFilter";
constexpr std::string_view kPoolForward = "Pool2DForward";
constexpr std::string_view kPoolBackward = "Pool2DBackward";

// The geometry of x [n, h, w, c] and the window producing `out` (y or
// dy), whose shape must be `want` (Conv2DOutputShape or Pool2DOutputShape,
// already computed); InvalidArgument naming `method` and `args` otherwise.
Result<ConvGeometry> MakeGeometry(std::string_view method, const Shape& x,
                                  const Result<Shape>& want, const Shape& out, const Window2D& w,
                                  std::initializer_list<Arg> args) {
  if (!want.ok()) return Invalid(method, want.status().message(), args);
  if (out != *want) return Invalid(method, "output must be " + want->ToString(), args);
  Result<WindowDim> dh = ComputeWindowDim(x.dim(1), w.kernel_h, w.stride_h, w.padding);
  Result<WindowDim> dw = ComputeWindowDim(x.dim(2), w.kernel_w, w.stride_w, w.padding);
  if (!dh.ok() || !dw.ok()) return Invalid(method, "the window does not fit", args);
  ConvGeometry g;
  g.batch = x.dim(0);
  g.in_h = x.dim(1);
  g.in_w = x.dim(2);
  g.in_c = x.dim(3);
  g.out_h = dh->out;
  g.out_w = dw->out;
  g.out_c = out.dim(3);
  g.kernel_h = w.kernel_h;
  g.kernel_w = w.kernel_w;
  g.stride_h = w.stride_h;
  g.stride_w = w.stride_w;
  g.pad_top = dh->pad_before;
  g.pad_bottom = dh->pad_after;
  g.pad_left = dw->pad_before;
  g.pad_right = dw->pad_after;
  return g;
}

// A convolution of x [n, h, w, c] with filter [kh, kw, c, o] into `out`.
Result<ConvGeometry> ConvGeometryOf(std::string_view method, const Shape& x, const Shape& filter,
                                    const Shape& out, const Window2D& w,
                                    std::initializer_list<Arg> args) {
  if (x.rank() != 4 || filter.rank() != 4) {
    return Invalid(method, "x must be NHWC and the filter HWIO (rank 4)", args);
  }
  return MakeGeometry(method, x, Conv2DOutputShape(x, filter, w), out, w, args);
}

Result<ConvGeometry> PoolGeometryOf(std::string_view method, const Shape& x, const Shape& y,
                                    const Window2D& w, std::initializer_list<Arg> args) {
  if (x.rank() != 4) return Invalid(method, "x must be NHWC (rank 4)", args);
  return MakeGeometry(method, x, Pool2DOutputShape(x, w), y, w, args);
}

// `bias` (optional, named `name`) must be float32 [out] on `device`.
Status CheckBias(std::string_view method, Device device, std::string_view name,
                 const DeviceTensor* bias, const Arg& filter) {
  if (bias == nullptr) return Status::OK();
  SLUICE_RETURN_IF_ERROR(CheckTensors(method, device, DType::kFloat32, {{name, bias}}));
  if (bias->shape() != Shape{filter.second->dim(3)}) {
    return Invalid(method, std::string(name) + " must be [out]", {filter, {name, bias}});
  }
  return Status::OK();
}

}  // namespace

Result<ConvGeometry> CheckConv2DForward(Device device, const DeviceTensor& x,
                                        const DeviceTensor& filter, const DeviceTensor* bias,
                                        const Window2D& window, const DeviceTensor* y,
                                        DType dtype) {
  const auto args = {Arg{"x", &x}, Arg{"filter", &filter}, Arg{"y", y}};
  SLUICE_RETURN_IF_ERROR(CheckTensors(kConvForward, device, dtype, args));
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g, ConvGeometryOf(kConvForward, x.shape(), filter.shape(),
                                                         y->shape(), window, args));
  SLUICE_RETURN_IF_ERROR(CheckBias(kConvForward, device, "bias", bias, {"filter", &filter}));
  return g;
}

Result<ConvGeometry> CheckConv2DBackwardData(Device device, const DeviceTensor& dy,
                                             const DeviceTensor& filter, const Window2D& window,
                                             const DeviceTensor* dx, DType dtype) {
  const auto args = {Arg{"dy", &dy}, Arg{"filter", &filter}, Arg{"dx", dx}};
  SLUICE_RETURN_IF_ERROR(CheckTensors(kConvBackwardData, device, dtype, args));
  return ConvGeometryOf(kConvBackwardData, dx->shape(), filter.shape(), dy.shape(), window, args);
}

Result<ConvGeometry> CheckConv2DBackwardFilter(Device device, const DeviceTensor& x,
                                               const DeviceTensor& dy, const Window2D& window,
                                               const DeviceTensor* dfilter,
                                               const DeviceTensor* dbias, DType dtype,
                                               DType dfilter_dtype) {
  const auto args = {Arg{"x", &x}, Arg{"dy", &dy}, Arg{"dfilter", dfilter}};
  SLUICE_RETURN_IF_ERROR(
      CheckTensors(kConvBackwardFilter, device, dtype, {Arg{"x", &x}, Arg{"dy", &dy}}));
  SLUICE_RETURN_IF_ERROR(
      CheckTensors(kConvBackwardFilter, device, dfilter_dtype, {Arg{"dfilter", dfilter}}));
  SLUICE_ASSIGN_OR_RETURN(
      ConvGeometry g,
      ConvGeometryOf(kConvBackwardFilter, x.shape(), dfilter->shape(), dy.shape(), window, args));
  SLUICE_RETURN_IF_ERROR(
      CheckBias(kConvBackwardFilter, device, "dbias", dbias, {"dfilter", dfilter}));
  return g;
}

Result<ConvGeometry> CheckPool2DForward(Device device, const DeviceTensor& x,
                                        const Window2D& window, const DeviceTensor* y,
                                        FloatTypes types) {
  const auto args = {Arg{"x", &x}, Arg{"y", y}};
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kPoolForward, device, types, args));
  return PoolGeometryOf(kPoolForward, x.shape(), y->shape(), window, args);
}

Result<ConvGeometry> CheckPool2DBackward(Device device, const DeviceTensor& x,
                                         const DeviceTensor& y, const DeviceTensor& dy,
                                         const Window2D& window, const DeviceTensor* dx,
                                         FloatTypes types) {
  const auto args = {Arg{"x", &x}, Arg{"y", &y}, Arg{"dy", &dy}, Arg{"dx", dx}};
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kPoolBackward, device, types, args));
  SLUICE_ASSIGN_OR_RETURN(ConvGeometry g,
                          PoolGeometryOf(kPoolBackward, x.shape(), y.shape(), window, args));
  if (dy.shape() != y.shape() || dx->shape() != x.shape()) {
    return Invalid(kPoolBackward, "dy must have y's shape and dx x's", args);
  }
  return g;
}

}  // namespace sluice::nn::kit
