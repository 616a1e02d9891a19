#include <string>

#include "sluice/nn/layers.h"

namespace sluice::nn {

Pooling2D::Pooling2D(PoolMode mode, Pool2DOptions o, std::string name)
    : Layer(std::move(name)),
      mode_(mode),
      window_{o.pool_h, o.pool_w, o.stride_h > 0 ? o.stride_h : o.pool_h,
              o.stride_w > 0 ? o.stride_w : o.pool_w, o.padding} {}

std::unique_ptr<Layer> Pooling2D::CloneLayer() const {
  Pool2DOptions o{window_.kernel_h, window_.kernel_w, window_.stride_h, window_.stride_w,
                  window_.padding};
  return std::make_unique<Pooling2D>(mode_, o, name());
}

Result<DeviceTensor> Pooling2D::Call(const DeviceTensor& x, bool training) {
  Result<Shape> out = Pool2DOutputShape(x.shape(), window_);
  if (!out.ok()) {
    return Status::InvalidArgument("layer " + name() + ": " + std::string(out.status().message()));
  }
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend().Allocate(compute_dtype(), *out));
  DeviceTensor workspace;
  SLUICE_RETURN_IF_ERROR(
      backend().Pool2DForward(mode_, x, window_, &y, training ? &workspace : nullptr));
  if (training) {
    x_ = x;
    y_ = y;
    workspace_ = workspace;
  }
  return y;
}

Result<DeviceTensor> Pooling2D::Backward(const DeviceTensor& dy) {
  if (y_.empty()) return Status::FailedPrecondition("layer " + name() + ": Backward before Call");
  if (!input_gradient_needed()) return DeviceTensor();
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, backend().Allocate(compute_dtype(), x_.shape()));
  SLUICE_RETURN_IF_ERROR(backend().Pool2DBackward(mode_, x_, y_, dy, workspace_, window_, &dx));
  return dx;
}

std::string Pooling2D::Describe() const {
  std::string d = std::to_string(window_.kernel_h) + "x" + std::to_string(window_.kernel_w);
  if (window_.stride_h != window_.kernel_h || window_.stride_w != window_.kernel_w) {
    d += " /" + std::to_string(window_.stride_h) + "x" + std::to_string(window_.stride_w);
  }
  if (window_.padding == Padding::kSame) d += " same";
  return d;
}

}  // namespace sluice::nn
