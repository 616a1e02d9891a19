// The training methods' argument checks (train_checks.h), moved out of
// nn/cpu/activations.cc, losses.cc and optimizers.cc.
#include "sluice/nn/kit/train_checks.h"

#include <cmath>
#include <string>
#include <string_view>

#include "sluice/nn/kit/backend_checks.h"

namespace sluice::nn::kit {

Status CheckActivationForward(Device device, Activation f, const DeviceTensor& x,
                              const DeviceTensor* y, FloatTypes types) {
  constexpr std::string_view kMethod = "ActivationForward";
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kMethod, device, types, {{"x", &x}, {"y", y}}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"x", &x}, {"y", y}));
  if (f == Activation::kSoftmax && x.rank() < 1) {
    return Invalid(kMethod, "softmax needs rank >= 1", {{"x", &x}});
  }
  return Status::OK();
}

Status CheckActivationBackward(Device device, Activation f, const DeviceTensor& y,
                               const DeviceTensor& dy, const DeviceTensor* dx, FloatTypes types) {
  constexpr std::string_view kMethod = "ActivationBackward";
  SLUICE_RETURN_IF_ERROR(
      CheckFloatTensors(kMethod, device, types, {{"y", &y}, {"dy", &dy}, {"dx", dx}}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"y", &y}, {"dy", &dy}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"y", &y}, {"dx", dx}));
  if (f == Activation::kSoftmax && y.rank() < 1) {
    return Invalid(kMethod, "softmax needs rank >= 1", {{"y", &y}});
  }
  return Status::OK();
}

Status CheckCrossEntropy(Device device, const DeviceTensor& pred, const DeviceTensor& labels,
                         const DeviceTensor* loss, const DeviceTensor* dpred, FloatTypes types) {
  constexpr std::string_view kMethod = "CrossEntropy";
  SLUICE_RETURN_IF_ERROR(
      CheckFloatTensors(kMethod, device, types, {{"pred", &pred}, {"loss", loss}}));
  if (dpred != nullptr) {
    SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kMethod, device, types, {{"dpred", dpred}}));
    SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"pred", &pred}, {"dpred", dpred}));
  }
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device, labels.dtype(), {{"labels", &labels}}));
  const std::initializer_list<Arg> all = {{"pred", &pred}, {"labels", &labels}, {"loss", loss}};
  if (pred.rank() != 2 || pred.dim(1) == 0) {
    return Invalid(kMethod, "pred must be [n, c], c > 0", all);
  }
  const int64_t n = pred.dim(0);
  if (loss->shape() != Shape{n}) return Invalid(kMethod, "loss must be [n]", all);
  if (labels.dtype() == DType::kInt32 || labels.dtype() == DType::kInt64) {
    const bool ok = (labels.rank() == 1 && labels.dim(0) == n) ||
                    (labels.rank() == 2 && labels.dim(0) == n && labels.dim(1) == 1);
    if (!ok) return Invalid(kMethod, "class-id labels must be [n] or [n, 1]", all);
  } else if (labels.dtype() == DType::kFloat32 ||
             (labels.dtype() == DType::kBFloat16 && types == FloatTypes::kFloat32OrBFloat16)) {
    if (labels.shape() != pred.shape()) return Invalid(kMethod, "dense labels must be [n, c]", all);
  } else {
    return Invalid(kMethod,
                   types == FloatTypes::kFloat32
                       ? "labels must be int32, int64 or float32"
                       : "labels must be int32, int64, float32 or bfloat16",
                   all);
  }
  return Status::OK();
}

Status CheckMeanSquaredError(Device device, const DeviceTensor& pred, const DeviceTensor& target,
                             const DeviceTensor* loss, const DeviceTensor* dpred,
                             FloatTypes types) {
  constexpr std::string_view kMethod = "MeanSquaredError";
  SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kMethod, device, types,
                                           {{"pred", &pred}, {"target", &target}, {"loss", loss}}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"pred", &pred}, {"target", &target}));
  if (dpred != nullptr) {
    SLUICE_RETURN_IF_ERROR(CheckFloatTensors(kMethod, device, types, {{"dpred", dpred}}));
    SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"pred", &pred}, {"dpred", dpred}));
  }
  if (pred.rank() < 1 || loss->shape() != Shape{pred.dim(0)}) {
    return Invalid(kMethod, "pred must have rank >= 1 and loss be [n]",
                   {{"pred", &pred}, {"loss", loss}});
  }
  return Status::OK();
}

Status CheckSgdUpdate(Device device, const DeviceTensor& grad, float momentum,
                      const DeviceTensor* var, const DeviceTensor* velocity) {
  constexpr std::string_view kMethod = "SgdUpdate";
  SLUICE_RETURN_IF_ERROR(
      CheckTensors(kMethod, device, DType::kFloat32, {{"grad", &grad}, {"var", var}}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"grad", &grad}, {"var", var}));
  if (momentum == 0.0f && velocity == nullptr) return Status::OK();
  if (velocity == nullptr) {
    return Invalid(kMethod, "momentum " + std::to_string(momentum) + " needs a velocity",
                   {{"grad", &grad}, {"var", var}});
  }
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device, DType::kFloat32, {{"velocity", velocity}}));
  return CheckSameShape(kMethod, {"grad", &grad}, {"velocity", velocity});
}

Status CheckAdamUpdate(Device device, const DeviceTensor& grad, const AdamStep& step,
                       const DeviceTensor* var, const DeviceTensor* m, const DeviceTensor* v) {
  constexpr std::string_view kMethod = "AdamUpdate";
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device, DType::kFloat32,
                                      {{"grad", &grad}, {"var", var}, {"m", m}, {"v", v}}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"grad", &grad}, {"var", var}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"grad", &grad}, {"m", m}));
  SLUICE_RETURN_IF_ERROR(CheckSameShape(kMethod, {"grad", &grad}, {"v", v}));
  if (step.step_counter != nullptr) return CheckCounter(kMethod, device, step.step_counter);
  if (step.step < 1) {
    return Status::InvalidArgument("AdamUpdate: step counts from 1, got " +
                                   std::to_string(step.step));
  }
  return Status::OK();
}

float AdamCorrectedRate(const AdamStep& step) {
  const double t = static_cast<double>(step.step);
  return static_cast<float>(step.learning_rate * std::sqrt(1.0 - std::pow(double{step.beta_2}, t)) /
                            (1.0 - std::pow(double{step.beta_1}, t)));
}

}  // namespace sluice::nn::kit
