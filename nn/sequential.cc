#include "sluice/nn/sequential.h"

#include <cstdio>
#include <map>

#include "sluice/nn/internal/replicas.h"
#include "sluice/nn/layers.h"

namespace sluice::nn {

// A structural node of the checkpoint graph with fixed children.
struct Sequential::Node : Trackable {
  std::vector<Child> children;
  std::vector<Child> TrackableChildren() override { return children; }
};

Sequential::Sequential(std::string name)
    : Layer(std::move(name)),
      functional_(std::make_unique<Node>()),
      operations_(std::make_unique<Node>()),
      input_layer_(std::make_unique<Node>()) {
  set_autocast(false);  // each layer casts for itself
}

Sequential::~Sequential() = default;

Layer* Sequential::Add(std::unique_ptr<Layer> layer) {
  // Unique names as Keras gives them: dense, dense_1, dense_2, ...
  std::string base = layer->name();
  int same = 0;
  for (const auto& l : layers_) {
    const std::string& n = l->name();
    if (n == base || (n.size() > base.size() + 1 && n.compare(0, base.size(), base) == 0 &&
                      n[base.size()] == '_')) {
      ++same;
    }
  }
  if (same > 0) layer->set_name(base + "_" + std::to_string(same));
  Status placed = layer->SetDevice(device());
  if (!placed.ok() && add_error_.ok()) {
    add_error_ =
        Status(placed.code(), "model " + name() + ": adding " + std::string(placed.message()));
  }
  layers_.push_back(std::move(layer));
  return layers_.back().get();
}

std::unique_ptr<Layer> Sequential::CloneLayer() const {
  auto copy = std::make_unique<Sequential>(name());
  for (const auto& l : layers_) {
    std::unique_ptr<Layer> c = l->Clone();
    if (!c) return nullptr;
    copy->layers_.push_back(std::move(c));  // names are already unique
  }
  return copy;
}

Status Sequential::Build(const Shape& input_shape) {
  if (layers_.empty() || input_shape.unknown_rank() || input_shape.rank() < 1) {
    return Status::OK();  // built by the first call
  }
  std::vector<int64_t> dims(input_shape.dims().begin(), input_shape.dims().end());
  dims[0] = 1;
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor zeros, backend().Zeros(DType::kFloat32, Shape(dims)));
  return Call(zeros, /*training=*/false).status();
}

Status Sequential::SetDevice(Device device) {
  SLUICE_RETURN_IF_ERROR(add_error_);
  SLUICE_RETURN_IF_ERROR(Layer::SetDevice(device));
  for (auto& l : layers_) SLUICE_RETURN_IF_ERROR(l->SetDevice(device));
  return Status::OK();
}

Status Sequential::Compile(CompileOptions options) {
  SLUICE_RETURN_IF_ERROR(add_error_);
  if (!options.optimizer) return Status::InvalidArgument("Compile: no optimizer");
  if (!options.loss) return Status::InvalidArgument("Compile: no loss");
  compiled_ = std::move(options);
  return Status::OK();
}

Result<DeviceTensor> Sequential::Call(const DeviceTensor& input, bool training) {
  if (layers_.empty()) return Status::FailedPrecondition("model " + name() + " has no layers");
  SLUICE_RETURN_IF_ERROR(add_error_);
  DeviceTensor x = input;
  // Keras casts integer inputs to float (Rescaling does it itself); each
  // layer then casts float inputs to its compute dtype.
  if (!IsFloatDType(x.dtype()) && dynamic_cast<Rescaling*>(layers_[0].get()) == nullptr) {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor f, backend().Allocate(DType::kFloat32, x.shape()));
    SLUICE_RETURN_IF_ERROR(backend().Cast(x, 1.0f, &f));
    x = f;
  }
  output_shapes_.resize(layers_.size());
  // A layer computes its input gradient only where something before it
  // needs one: a layer with trainable weights, or the model's own input. So
  // the first convolution after Rescaling skips its data gradient (the most
  // costly of a small CNN's backward pass), as frameworks do for data.
  bool needed = input_gradient_needed();
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->set_input_gradient_needed(needed);
    SLUICE_ASSIGN_OR_RETURN(x, layers_[i]->Forward(x, training));
    output_shapes_[i] = x.shape();
    needed = needed || !layers_[i]->trainable_weights().empty();
  }
  return x;
}

Result<DeviceTensor> Sequential::Backward(const DeviceTensor& dy) {
  DeviceTensor d = dy;
  for (size_t i = layers_.size(); i-- > 0;) {
    SLUICE_ASSIGN_OR_RETURN(d, layers_[i]->Backprop(d));
    if (gradients_ready_) SLUICE_RETURN_IF_ERROR(gradients_ready_(i));
    // Nothing before layer i trains, and no input gradient is wanted.
    if (!layers_[i]->input_gradient_needed()) return DeviceTensor();
    if (i > 0 && d.empty()) {
      return Status::Internal("layer " + layers_[i]->name() + " returned no input gradient");
    }
  }
  return d;
}

std::vector<Variable*> Sequential::trainable_variables() const {
  std::vector<Variable*> out;
  for (const auto& l : layers_) {
    for (Variable* v : l->trainable_weights()) out.push_back(v);
  }
  return out;
}

Result<DeviceTensor> Sequential::ToDeviceTensor(const Tensor& t) {
  SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(device()));
  return b->ToDevice(t);
}

Result<Sequential::Gradients> Sequential::ComputeGradients(const Tensor& x, const Tensor& y) {
  if (!compiled_.loss)
    return Status::FailedPrecondition("ComputeGradients: compile the model first");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xd, ToDeviceTensor(x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor yd, ToDeviceTensor(y));
  return ComputeGradients(xd, yd);
}

Result<Sequential::Gradients> Sequential::ComputeGradients(const DeviceTensor& x,
                                                           const DeviceTensor& y) {
  Gradients g;
  SLUICE_RETURN_IF_ERROR(ForwardBackward(x, y, &g, nullptr));
  return g;
}

Status Sequential::CheckOnModelDevice(std::string_view method, const DeviceTensor& x,
                                      const DeviceTensor& y) const {
  for (const DeviceTensor* t : {&x, &y}) {
    if (t->device() != device()) {
      return Status::InvalidArgument(std::string(method) + ": " + (t == &x ? "x" : "y") +
                                     " is on " + t->device().ToString() + ", model " + name() +
                                     " on " + device().ToString());
    }
  }
  return Status::OK();
}

Status Sequential::ForwardBackward(const DeviceTensor& x, const DeviceTensor& y, Gradients* g,
                                   DeviceTensor* per_example) {
  if (!compiled_.loss)
    return Status::FailedPrecondition("ComputeGradients: compile the model first");
  SLUICE_RETURN_IF_ERROR(CheckOnModelDevice("ComputeGradients", x, y));
  set_input_gradient_needed(false);  // x is data
  SLUICE_ASSIGN_OR_RETURN(g->predictions, Forward(x, /*training=*/true));
  if (y.rank() == 0 || (g->predictions.rank() > 0 && y.dim(0) != g->predictions.dim(0))) {
    return Status::InvalidArgument("labels " + y.shape().ToString() + " do not match outputs " +
                                   g->predictions.shape().ToString() + " of model " + name());
  }
  DeviceTensor dpred;
  if (per_example != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(
        *per_example, compiled_.loss->ComputePerExample(backend(), g->predictions, y, &dpred));
  } else {
    SLUICE_ASSIGN_OR_RETURN(g->loss, compiled_.loss->Compute(backend(), g->predictions, y, &dpred));
  }
  SLUICE_RETURN_IF_ERROR(Backward(dpred).status());
  for (const auto& l : layers_) {
    std::vector<Variable*> vars = l->trainable_weights();
    std::vector<DeviceTensor*> grads = l->gradients();
    g->variables.insert(g->variables.end(), vars.begin(), vars.end());
    g->grads.insert(g->grads.end(), grads.begin(), grads.end());
  }
  return Status::OK();
}

Result<double> Sequential::TrainStep(const Tensor& x, const Tensor& y) {
  if (!compiled_.optimizer) return Status::FailedPrecondition("TrainStep: compile the model first");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xd, ToDeviceTensor(x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor yd, ToDeviceTensor(y));
  return TrainStep(xd, yd);
}

Result<double> Sequential::TrainStep(const DeviceTensor& x, const DeviceTensor& y) {
  if (!compiled_.optimizer) return Status::FailedPrecondition("TrainStep: compile the model first");
  SLUICE_ASSIGN_OR_RETURN(Gradients g, ComputeGradients(x, y));
  SLUICE_RETURN_IF_ERROR(compiled_.optimizer->ApplyGradients(
      std::span<DeviceTensor* const>(g.grads), std::span<Variable* const>(g.variables)));
  for (const auto& m : compiled_.metrics) {
    SLUICE_RETURN_IF_ERROR(m->UpdateState(backend(), y, g.predictions));
  }
  return g.loss;
}

Result<Tensor> Sequential::Predict(const Tensor& x) {
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xd, ToDeviceTensor(x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor y, Forward(xd, false));
  SLUICE_ASSIGN_OR_RETURN(Tensor host, backend().ToHost(y));
  return host.Clone();  // the CPU backend shares; the caller gets its own
}

std::vector<Trackable::Child> Sequential::TrackableChildren() {
  operations_->children = {{"0", input_layer_.get()}};
  for (size_t i = 0; i < layers_.size(); ++i) {
    operations_->children.push_back({std::to_string(i + 1), layers_[i].get()});
  }
  functional_->children = {{"_operations", operations_.get()}};
  std::vector<Child> out = {{"_functional", functional_.get()}};
  if (compiled_.optimizer) out.push_back({"optimizer", compiled_.optimizer.get()});
  return out;
}

std::string Sequential::Summary() const {
  std::string out = "Model: \"" + name() + "\"\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-28s %-22s %-20s %12s\n", "Layer", "Config", "Output shape",
                "Params");
  out += line;
  out += std::string(85, '-') + "\n";
  int64_t total = 0, trainable = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = *layers_[i];
    std::string shape = i < output_shapes_.size() && output_shapes_[i].rank() > 0
                            ? output_shapes_[i].ToString()
                            : "?";
    if (i < output_shapes_.size() && output_shapes_[i].rank() > 0) {
      shape = "[None" + shape.substr(shape.find(',') == std::string::npos ? shape.size() - 1
                                                                          : shape.find(','));
    }
    std::snprintf(line, sizeof line, "%-28s %-22s %-20s %12lld\n", l.name().c_str(),
                  l.Describe().c_str(), shape.c_str(), static_cast<long long>(l.CountParams()));
    out += line;
    total += l.CountParams();
    for (const Variable* v : l.trainable_weights()) trainable += v->shape().num_elements();
  }
  out += std::string(85, '-') + "\n";
  out += "Total params: " + std::to_string(total) +
         "\nTrainable params: " + std::to_string(trainable) +
         "\nNon-trainable params: " + std::to_string(total - trainable) + "\n";
  return out;
}

}  // namespace sluice::nn
