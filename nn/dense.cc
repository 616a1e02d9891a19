#include <string>

#include "sluice/nn/layers.h"

namespace sluice::nn {

Dense::Dense(int units, DenseOptions options)
    : Layer(options.name), units_(units), options_(std::move(options)) {}

std::unique_ptr<Layer> Dense::CloneLayer() const {
  return std::make_unique<Dense>(units_, options_);
}

Status Dense::Build(const Shape& input_shape) {
  if (units_ <= 0) return Status::InvalidArgument("Dense: units must be positive");
  if (input_shape.unknown_rank() || input_shape.rank() < 2 ||
      input_shape.dim(input_shape.rank() - 1) <= 0) {
    return Status::InvalidArgument("Dense needs input [batch, ..., features], got " +
                                   input_shape.ToString());
  }
  int64_t in = input_shape.dim(input_shape.rank() - 1);
  SLUICE_ASSIGN_OR_RETURN(kernel_,
                          AddWeight("kernel", Shape{in, units_}, options_.kernel_initializer));
  if (options_.use_bias) {
    SLUICE_ASSIGN_OR_RETURN(bias_, AddWeight("bias", Shape{units_}, options_.bias_initializer));
  }
  return Status::OK();
}

Result<DeviceTensor> Dense::Call(const DeviceTensor& x, bool training) {
  int64_t in = kernel_->shape().dim(0);
  if (x.rank() < 2 || x.dim(x.rank() - 1) != in) {
    return Status::InvalidArgument("layer " + name() + " expects input [..., " +
                                   std::to_string(in) + "], got " + x.shape().ToString());
  }
  int64_t rows = x.num_elements() / in;
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor x2, x.Reshape(Shape{rows, in}));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend().Allocate(compute_dtype(), Shape{rows, units_}));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor kernel, ComputeValue(kernel_));
  SLUICE_RETURN_IF_ERROR(backend().MatMul(x2, false, kernel, false, 0.0f, &y));
  if (bias_ != nullptr) SLUICE_RETURN_IF_ERROR(backend().BiasAdd(bias_->value(), &y));
  if (options_.activation != Activation::kLinear) {
    SLUICE_RETURN_IF_ERROR(backend().ActivationForward(options_.activation, y, &y));
  }
  if (training) {
    x_ = x2;
    y_ = y;
    kernel_value_ = kernel;
    x_shape_ = x.shape();
  }
  std::vector<int64_t> out(x.shape().dims().begin(), x.shape().dims().end());
  out.back() = units_;
  return y.Reshape(Shape(out));
}

Result<DeviceTensor> Dense::Backward(const DeviceTensor& dy) {
  if (y_.empty()) return Status::FailedPrecondition("layer " + name() + ": Backward before Call");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dz, dy.Reshape(y_.shape()));
  if (options_.activation != Activation::kLinear) {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor t, backend().Allocate(compute_dtype(), y_.shape()));
    SLUICE_RETURN_IF_ERROR(backend().ActivationBackward(options_.activation, y_, dz, &t));
    dz = t;
  }
  SLUICE_RETURN_IF_ERROR(backend().MatMul(x_, true, dz, false, 0.0f, &gradient(kernel_)));
  if (bias_ != nullptr) SLUICE_RETURN_IF_ERROR(backend().BiasGrad(dz, 0.0f, &gradient(bias_)));
  if (!input_gradient_needed()) return DeviceTensor();
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, backend().Allocate(compute_dtype(), x_.shape()));
  SLUICE_RETURN_IF_ERROR(backend().MatMul(dz, false, kernel_value_, true, 0.0f, &dx));
  return dx.Reshape(x_shape_);
}

std::string Dense::Describe() const {
  std::string d = std::to_string(units_);
  if (options_.activation != Activation::kLinear)
    d += " " + std::string(ActivationName(options_.activation));
  return d;
}

}  // namespace sluice::nn
