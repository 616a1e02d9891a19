#include "sluice/nn/layer.h"

namespace sluice::nn {

Layer::Layer(std::string name) : name_(std::move(name)) {}
Layer::~Layer() = default;

Status Layer::SetDevice(Device device) {
  if (built_ && !(device == device_)) {
    return Status::FailedPrecondition("layer " + name_ + " is built on " + device_.ToString() +
                                      "; set the device before the first call");
  }
  device_ = device;
  return Status::OK();
}

Status Layer::SetDTypePolicy(const DTypePolicy& policy) {
  if (built_ && !(policy == policy_)) {
    return Status::FailedPrecondition("layer " + name_ + " is built with dtype policy " +
                                      std::string(policy_.name()) +
                                      "; set the policy before the first call");
  }
  policy_ = policy;
  return Status::OK();
}

Status Layer::Build(const Shape&) { return Status::OK(); }

std::unique_ptr<Layer> Layer::Clone() const {
  std::unique_ptr<Layer> c = CloneLayer();
  if (!c) return c;
  c->name_ = name_;
  c->policy_ = policy_;
  c->autocast_ = autocast_;
  return c;
}

Status Layer::EnsureBuilt(const Shape& input_shape) {
  if (built_) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(backend_, GetBackend(device_));
  rng_ = NextLayerRng();
  Status s = Build(input_shape);
  if (!s.ok()) {
    weights_.clear();
    return Status(s.code(), "building layer " + name_ + " for input " + input_shape.ToString() +
                                ": " + std::string(s.message()));
  }
  built_ = true;
  // Values a checkpoint restored before the weights existed.
  return RestoreDeferred();
}

Status Layer::BuildFor(const Shape& input_shape) {
  if (built_) return Status::FailedPrecondition("layer " + name_ + " is already built");
  return EnsureBuilt(input_shape);
}

Result<DeviceTensor> Layer::Forward(const DeviceTensor& x, bool training) {
  SLUICE_RETURN_IF_ERROR(EnsureBuilt(x.shape()));
  if (!(x.device() == device_)) {
    return Status::InvalidArgument("layer " + name_ + " is on " + device_.ToString() +
                                   " but its input is on " + x.device().ToString());
  }
  DeviceTensor in = x;
  if (autocast_) {
    SLUICE_ASSIGN_OR_RETURN(in, CastFloat(x, compute_dtype()));
  }
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, Call(in, training));
  if (training) {
    forward_in_ = x.dtype();
    forward_out_ = y.dtype();
  }
  return y;
}

Result<DeviceTensor> Layer::Backprop(const DeviceTensor& dy) {
  if (!autocast_) return Backward(dy);
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor d, CastFloat(dy, forward_out_));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dx, Backward(d));
  if (dx.empty()) return dx;
  return CastFloat(dx, forward_in_);
}

Result<DeviceTensor> Layer::CastFloat(const DeviceTensor& x, DType dtype) {
  if (!IsFloatDType(x.dtype()) || x.dtype() == dtype || x.empty() ||
      (dtype != DType::kFloat32 && dtype != DType::kBFloat16)) {
    return x;
  }
  if (backend_ == nullptr) return Status::FailedPrecondition("layer " + name_ + " is not built");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, backend_->Allocate(dtype, x.shape()));
  SLUICE_RETURN_IF_ERROR(backend_->Cast(x, 1.0f, &y));
  return y;
}

Result<DeviceTensor> Layer::ComputeValue(const Variable* w) {
  const DeviceTensor& v = w->value();
  if (compute_dtype() == v.dtype()) return v;
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor c, backend().Allocate(compute_dtype(), v.shape()));
  SLUICE_RETURN_IF_ERROR(backend().Cast(v, 1.0f, &c));
  return c;
}

Result<Variable*> Layer::AddWeight(const std::string& name, const Shape& shape,
                                   const Initializer& init, bool trainable) {
  if (backend_ == nullptr) {
    return Status::FailedPrecondition("layer " + name_ + ": AddWeight(" + name +
                                      ") outside Build()");
  }
  for (const Weight& w : weights_) {
    if (w.variable->name() == name_ + "/" + name) {
      return Status::InvalidArgument("layer " + name_ + " already has a weight named " + name);
    }
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor host, InitialValue(init, shape, rng_));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor value, backend_->Allocate(DType::kFloat32, shape));
  SLUICE_RETURN_IF_ERROR(backend_->CopyFromHost(host, &value));
  Weight w;
  w.variable = std::make_unique<Variable>(name_ + "/" + name, std::move(value), trainable);
  if (trainable) {
    SLUICE_ASSIGN_OR_RETURN(w.gradient, backend_->Zeros(DType::kFloat32, shape));
  }
  weights_.push_back(std::move(w));
  return weights_.back().variable.get();
}

DeviceTensor& Layer::gradient(const Variable* v) {
  for (Weight& w : weights_) {
    if (w.variable.get() == v) return w.gradient;
  }
  static DeviceTensor none;  // unreachable for a layer's own weights
  return none;
}

std::vector<Variable*> Layer::weights() const {
  std::vector<Variable*> out;
  for (const Weight& w : weights_) out.push_back(w.variable.get());
  return out;
}

std::vector<Variable*> Layer::trainable_weights() const {
  std::vector<Variable*> out;
  for (const Weight& w : weights_) {
    if (w.variable->trainable()) out.push_back(w.variable.get());
  }
  return out;
}

std::vector<DeviceTensor*> Layer::gradients() {
  std::vector<DeviceTensor*> out;
  for (Weight& w : weights_) {
    if (w.variable->trainable()) out.push_back(&w.gradient);
  }
  return out;
}

int64_t Layer::CountParams() const {
  int64_t n = 0;
  for (const Weight& w : weights_) n += w.variable->shape().num_elements();
  return n;
}

std::vector<Trackable::Child> Layer::TrackableChildren() {
  std::vector<Child> out;
  for (Weight& w : weights_) {
    const std::string& full = w.variable->name();
    std::string name = full.substr(full.rfind('/') + 1);
    // Keras 3's Dense and Conv layers track their kernel as `_kernel`.
    if (name == "kernel") name = "_kernel";
    out.push_back({std::move(name), w.variable.get()});
  }
  return out;
}

}  // namespace sluice::nn
