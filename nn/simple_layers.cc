// Flatten, Activation, Dropout, Rescaling: layers without a kernel.
#include <cstdio>
#include <string>

#include "sluice/nn/layers.h"

namespace sluice::nn {

Result<DeviceTensor> Flatten::Call(const DeviceTensor& x, bool training) {
  if (x.rank() < 1) return Status::InvalidArgument("Flatten needs a batch dimension");
  int64_t batch = x.dim(0);
  int64_t rest = batch == 0 ? 0 : x.num_elements() / batch;
  if (training) x_shape_ = x.shape();
  return x.Reshape(Shape{batch, rest});
}

Result<DeviceTensor> Flatten::Backward(const DeviceTensor& dy) {
  if (x_shape_.rank() == 0) {
    return Status::FailedPrecondition("layer " + name() + ": Backward before Call");
  }
  return dy.Reshape(x_shape_);
}

Result<DeviceTensor> ActivationLayer::Call(const DeviceTensor& x, bool training) {
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend().Allocate(compute_dtype(), x.shape()));
  SLUICE_RETURN_IF_ERROR(backend().ActivationForward(f_, x, &y));
  if (training) y_ = y;
  return y;
}

Result<DeviceTensor> ActivationLayer::Backward(const DeviceTensor& dy) {
  if (y_.empty()) return Status::FailedPrecondition("layer " + name() + ": Backward before Call");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, backend().Allocate(compute_dtype(), y_.shape()));
  SLUICE_RETURN_IF_ERROR(backend().ActivationBackward(f_, y_, dy, &dx));
  return dx;
}

Dropout::Dropout(float rate) : Layer("dropout"), rate_(rate) {}

Result<DeviceTensor> Dropout::Call(const DeviceTensor& x, bool training) {
  if (!(rate_ >= 0.0f && rate_ < 1.0f)) {
    return Status::InvalidArgument("Dropout rate must be in [0, 1), got " + std::to_string(rate_));
  }
  if (seed_ == 0) seed_ = rng().NextU64() | 1;
  identity_ = !training || rate_ == 0.0f;
  if (identity_) return x;
  SLUICE_ASSIGN_OR_RETURN(mask_, backend().Allocate(compute_dtype(), x.shape()));
  if (calls_.empty()) {
    SLUICE_ASSIGN_OR_RETURN(calls_, backend().Zeros(DType::kInt64, Shape{}));
  }
  SLUICE_RETURN_IF_ERROR(backend().DropoutMaskFromCounter(rate_, seed_, calls_, &mask_));
  SLUICE_RETURN_IF_ERROR(backend().AddToCounter(1, &calls_));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend().Allocate(compute_dtype(), x.shape()));
  SLUICE_RETURN_IF_ERROR(backend().Multiply(x, mask_, &y));
  return y;
}

Result<DeviceTensor> Dropout::Backward(const DeviceTensor& dy) {
  if (identity_) return dy;
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, backend().Allocate(compute_dtype(), dy.shape()));
  SLUICE_RETURN_IF_ERROR(backend().Multiply(dy, mask_, &dx));
  return dx;
}

std::string Dropout::Describe() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rate %g", rate_);
  return buf;
}

Rescaling::Rescaling(float scale, float offset)
    : Layer("rescaling"), scale_(scale), offset_(offset) {}

Result<DeviceTensor> Rescaling::Call(const DeviceTensor& x, bool) {
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend().Allocate(compute_dtype(), x.shape()));
  SLUICE_RETURN_IF_ERROR(backend().Cast(x, scale_, &y));
  if (offset_ != 0.0f && x.rank() > 0) {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor bias,
                            backend().Allocate(compute_dtype(), Shape{x.dim(x.rank() - 1)}));
    SLUICE_RETURN_IF_ERROR(backend().Fill(offset_, &bias));
    SLUICE_RETURN_IF_ERROR(backend().BiasAdd(bias, &y));
  }
  return y;
}

Result<DeviceTensor> Rescaling::Backward(const DeviceTensor& dy) {
  if (!input_gradient_needed()) return DeviceTensor();
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, backend().Allocate(compute_dtype(), dy.shape()));
  SLUICE_RETURN_IF_ERROR(backend().Axpby(scale_, dy, 0.0f, &dx));
  return dx;
}

std::string Rescaling::Describe() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "x%g%+g", scale_, offset_);
  return buf;
}

}  // namespace sluice::nn
