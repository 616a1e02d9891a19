#include <string>

#include "sluice/nn/layers.h"

namespace sluice::nn {

Conv2D::Conv2D(int filters, int kernel_h, int kernel_w, Conv2DOptions options)
    : Layer(options.name),
      filters_(filters),
      window_{kernel_h, kernel_w, options.stride_h, options.stride_w, options.padding},
      options_(std::move(options)) {}

std::unique_ptr<Layer> Conv2D::CloneLayer() const {
  return std::make_unique<Conv2D>(filters_, window_.kernel_h, window_.kernel_w, options_);
}

Status Conv2D::Build(const Shape& input_shape) {
  if (filters_ <= 0) return Status::InvalidArgument("Conv2D: filters must be positive");
  if (input_shape.unknown_rank() || input_shape.rank() != 4 || input_shape.dim(3) <= 0) {
    return Status::InvalidArgument("Conv2D needs input [batch, height, width, channels], got " +
                                   input_shape.ToString());
  }
  Shape kshape{window_.kernel_h, window_.kernel_w, input_shape.dim(3), filters_};
  SLUICE_ASSIGN_OR_RETURN(kernel_, AddWeight("kernel", kshape, options_.kernel_initializer));
  if (options_.use_bias) {
    SLUICE_ASSIGN_OR_RETURN(bias_, AddWeight("bias", Shape{filters_}, options_.bias_initializer));
  }
  return Status::OK();
}

Result<DeviceTensor> Conv2D::Call(const DeviceTensor& x, bool training) {
  Result<Shape> out = Conv2DOutputShape(x.shape(), kernel_->shape(), window_);
  if (!out.ok()) {
    return Status::InvalidArgument("layer " + name() + ": " + std::string(out.status().message()));
  }
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend().Allocate(compute_dtype(), *out));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor kernel, ComputeValue(kernel_));
  SLUICE_RETURN_IF_ERROR(backend().Conv2DForward(
      x, kernel, bias_ != nullptr ? &bias_->value() : nullptr, window_, &y));
  if (options_.activation != Activation::kLinear) {
    SLUICE_RETURN_IF_ERROR(backend().ActivationForward(options_.activation, y, &y));
  }
  if (training) {
    x_ = x;
    y_ = y;
    kernel_value_ = kernel;
  }
  return y;
}

Result<DeviceTensor> Conv2D::Backward(const DeviceTensor& dy) {
  if (y_.empty()) return Status::FailedPrecondition("layer " + name() + ": Backward before Call");
  DeviceTensor dz = dy;
  if (options_.activation != Activation::kLinear) {
    SLUICE_ASSIGN_OR_RETURN(dz, backend().Allocate(compute_dtype(), y_.shape()));
    SLUICE_RETURN_IF_ERROR(backend().ActivationBackward(options_.activation, y_, dy, &dz));
  }
  SLUICE_RETURN_IF_ERROR(backend().Conv2DBackwardFilter(
      x_, dz, window_, &gradient(kernel_), bias_ != nullptr ? &gradient(bias_) : nullptr));
  if (!input_gradient_needed()) return DeviceTensor();
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, backend().Allocate(compute_dtype(), x_.shape()));
  SLUICE_RETURN_IF_ERROR(backend().Conv2DBackwardData(dz, kernel_value_, window_, &dx));
  return dx;
}

std::string Conv2D::Describe() const {
  std::string d = std::to_string(filters_) + " " + std::to_string(window_.kernel_h) + "x" +
                  std::to_string(window_.kernel_w);
  if (window_.stride_h != 1 || window_.stride_w != 1) {
    d += " /" + std::to_string(window_.stride_h) + "x" + std::to_string(window_.stride_w);
  }
  if (window_.padding == Padding::kSame) d += " same";
  if (options_.activation != Activation::kLinear) {
    d += " " + std::string(ActivationName(options_.activation));
  }
  return d;
}

}  // namespace sluice::nn
