#include "sluice/nn/variable.h"

#include "sluice/nn/backend.h"

namespace sluice::nn {

Variable::Variable(std::string name, DeviceTensor value, bool trainable)
    : name_(std::move(name)), value_(std::move(value)), trainable_(trainable) {}

Variable::Variable(std::string name, Tensor host, bool trainable)
    : Variable(std::move(name), DeviceTensor(Device::Cpu(), std::move(host)), trainable) {}

Result<Tensor> Variable::Read() const {
  SLUICE_ASSIGN_OR_RETURN(Backend * backend, GetBackend(value_.device()));
  SLUICE_ASSIGN_OR_RETURN(Tensor host, backend->ToHost(value_));
  // The CPU backend shares bytes; hand out a copy so later training steps do
  // not change a tensor the caller holds (a checkpoint being written, say).
  if (value_.device().kind() == DeviceKind::kCpu) return host.Clone();
  return host;
}

Status Variable::Assign(const Tensor& host) {
  if (host.dtype() != value_.dtype() || host.shape() != value_.shape()) {
    return Status::InvalidArgument("variable " + name_ + " is " +
                                   std::string(DTypeName(value_.dtype())) +
                                   value_.shape().ToString() + ", cannot assign " +
                                   std::string(DTypeName(host.dtype())) + host.shape().ToString());
  }
  SLUICE_ASSIGN_OR_RETURN(Backend * backend, GetBackend(value_.device()));
  return backend->CopyFromHost(host, &value_);
}

std::vector<Trackable::Attribute> Variable::TrackableAttributes() {
  return {Attribute{"VARIABLE_VALUE", [this] { return Read(); },
                    [this](const Tensor& t) { return Assign(t); }}};
}

}  // namespace sluice::nn
