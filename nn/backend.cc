#include "sluice/nn/backend.h"

#include <map>
#include <mutex>

#include "sluice/nn/internal/cpu_factory.h"

namespace sluice::nn {

Result<Activation> ParseActivation(std::string_view name) {
  if (name.empty() || name == "linear" || name == "none") return Activation::kLinear;
  if (name == "relu") return Activation::kRelu;
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "tanh") return Activation::kTanh;
  if (name == "softmax") return Activation::kSoftmax;
  return Status::InvalidArgument("unknown activation \"" + std::string(name) +
                                 "\" (expected linear, relu, sigmoid, tanh or softmax)");
}

std::string_view ActivationName(Activation a) {
  switch (a) {
    case Activation::kLinear: return "linear";
    case Activation::kRelu: return "relu";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kTanh: return "tanh";
    case Activation::kSoftmax: return "softmax";
  }
  return "?";
}

Result<DeviceTensor> Backend::Zeros(DType dtype, const Shape& shape) {
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor t, Allocate(dtype, shape));
  if (dtype == DType::kFloat32) {
    SLUICE_RETURN_IF_ERROR(Fill(0.0f, &t));
  } else {
    SLUICE_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Zeros(dtype, shape));
    SLUICE_RETURN_IF_ERROR(CopyFromHost(zeros, &t));
  }
  return t;
}

Result<std::unique_ptr<CapturedWork>> Backend::Capture(const std::function<Status()>&) {
  return Status::InvalidArgument(name() +
                                 " cannot capture work: it runs each call at once (capture needs "
                                 "the GPU backend)");
}

namespace {
using Factory = std::function<Result<std::unique_ptr<Backend>>(Device)>;
struct Registry {
  std::mutex mu;
  std::map<DeviceKind, Factory> factories;
  std::map<std::pair<int, int>, std::unique_ptr<Backend>> backends;
};
Registry& GetRegistry() {
  static Registry* r = new Registry;  // lives until exit: backends are handed out raw
  return *r;
}
}  // namespace

void RegisterBackendFactory(DeviceKind kind, Factory factory) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  r.factories[kind] = std::move(factory);
}

Result<Backend*> GetBackend(Device device) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  auto key = std::make_pair(static_cast<int>(device.kind()), device.index());
  if (auto it = r.backends.find(key); it != r.backends.end()) return it->second.get();
  Result<std::unique_ptr<Backend>> made = Status::NotFound("");
  if (auto f = r.factories.find(device.kind()); f != r.factories.end()) {
    made = f->second(device);
  } else if (device.kind() == DeviceKind::kCpu) {
    made = nn_internal::MakeCpuBackend(device);
  } else {
    return Status::NotFound(
        "no backend for device " + device.ToString() +
        ": sluice was built without the gpu module, or the program did not call "
        "sluice::gpu::RegisterNnBackend()");
  }
  if (!made.ok()) return made.status();
  Backend* b = made->get();
  r.backends[key] = std::move(*made);
  return b;
}

}  // namespace sluice::nn
