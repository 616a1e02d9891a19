// Sequential::CaptureTrainStep and CapturedTrainStep: a training step
// recorded with Backend::Capture and replayed (sequential.h).
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sluice/nn/sequential.h"

namespace sluice::nn {
Status Sequential::CheckCanCapture() {
  if (!compiled_.optimizer || !compiled_.loss) {
    return Status::FailedPrecondition("CaptureTrainStep: compile the model first");
  }
  SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(device()));
  if (!b->can_capture()) {
    // Before the eager step: a model that cannot record is left untouched.
    return Status::InvalidArgument("CaptureTrainStep: " + b->name() +
                                   " cannot capture work (capture needs the GPU backend)");
  }
  return Status::OK();
}

Result<std::unique_ptr<CapturedTrainStep>> Sequential::CaptureTrainStep(const Tensor& x,
                                                                        const Tensor& y) {
  SLUICE_RETURN_IF_ERROR(CheckCanCapture());
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor xd, ToDeviceTensor(x));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor yd, ToDeviceTensor(y));
  return CaptureInto(std::move(xd), std::move(yd));
}

Result<std::unique_ptr<CapturedTrainStep>> Sequential::CaptureTrainStep(const DeviceTensor& x,
                                                                        const DeviceTensor& y) {
  SLUICE_RETURN_IF_ERROR(CheckCanCapture());
  SLUICE_RETURN_IF_ERROR(CheckOnModelDevice("CaptureTrainStep", x, y));
  SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(device()));
  std::vector<DeviceTensor> owned;
  for (const DeviceTensor* t : {&x, &y}) {
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor copy, b->Allocate(t->dtype(), t->shape()));
    SLUICE_RETURN_IF_ERROR(b->Copy(*t, &copy));
    owned.push_back(std::move(copy));
  }
  return CaptureInto(std::move(owned[0]), std::move(owned[1]));
}

Result<std::unique_ptr<CapturedTrainStep>> Sequential::CaptureInto(DeviceTensor x, DeviceTensor y) {
  SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(device()));
  std::unique_ptr<CapturedTrainStep> step(new CapturedTrainStep);
  step->model_ = this;
  step->x_ = std::move(x);
  step->y_ = std::move(y);
  // Eagerly once: builds the layers and the optimizer's slots, which a
  // recording must find made.
  SLUICE_ASSIGN_OR_RETURN(step->first_loss_, TrainStep(step->x_, step->y_));
  SLUICE_RETURN_IF_ERROR(compiled_.optimizer->SyncStepCounter());
  const int64_t iterations = compiled_.optimizer->iterations();
  Result<std::unique_ptr<CapturedWork>> work = b->Capture([&]() -> Status {
    Gradients g;
    SLUICE_RETURN_IF_ERROR(ForwardBackward(step->x_, step->y_, &g, &step->per_example_));
    step->predictions_ = g.predictions;
    return compiled_.optimizer->ApplyGradients(std::span<DeviceTensor* const>(g.grads),
                                               std::span<Variable* const>(g.variables));
  });
  // A recorded ApplyGradients counted a step that has not run.
  compiled_.optimizer->AdvanceIterations(iterations - compiled_.optimizer->iterations());
  if (!work.ok()) return work.status().WithContext("CaptureTrainStep");
  step->work_ = std::move(*work);
  return step;
}

Status CapturedTrainStep::CheckBatch(DType x_dtype, const Shape& x_shape, DType y_dtype,
                                     const Shape& y_shape) const {
  for (const auto& [what, recorded, dtype, shape] :
       {std::tuple{"x", &x_, x_dtype, &x_shape}, std::tuple{"y", &y_, y_dtype, &y_shape}}) {
    if (recorded->dtype() == dtype && recorded->shape() == *shape) continue;
    return Status::InvalidArgument(
        std::string("CapturedTrainStep: ") + what + " is " + std::string(DTypeName(dtype)) +
        shape->ToString() + ", the step was captured for " +
        std::string(DTypeName(recorded->dtype())) + recorded->shape().ToString());
  }
  return Status::OK();
}

bool CapturedTrainStep::Accepts(const Tensor& x, const Tensor& y) const {
  return CheckBatch(x.dtype(), x.shape(), y.dtype(), y.shape()).ok();
}

bool CapturedTrainStep::Accepts(const DeviceTensor& x, const DeviceTensor& y) const {
  return CheckBatch(x.dtype(), x.shape(), y.dtype(), y.shape()).ok();
}

Result<double> CapturedTrainStep::Run(const Tensor& x, const Tensor& y) {
  SLUICE_RETURN_IF_ERROR(CheckBatch(x.dtype(), x.shape(), y.dtype(), y.shape()));
  Backend& b = model_->backend();
  SLUICE_RETURN_IF_ERROR(b.CopyFromHost(x, &x_));
  SLUICE_RETURN_IF_ERROR(b.CopyFromHost(y, &y_));
  return Replay();
}

Result<double> CapturedTrainStep::Run(const DeviceTensor& x, const DeviceTensor& y) {
  SLUICE_RETURN_IF_ERROR(CheckBatch(x.dtype(), x.shape(), y.dtype(), y.shape()));
  Backend& b = model_->backend();
  SLUICE_RETURN_IF_ERROR(b.Copy(x, &x_));
  SLUICE_RETURN_IF_ERROR(b.Copy(y, &y_));
  return Replay();
}

Result<double> CapturedTrainStep::Replay() {
  Backend& b = model_->backend();
  Optimizer& optimizer = *model_->compiled_.optimizer;
  SLUICE_RETURN_IF_ERROR(optimizer.SyncStepCounter());  // after a restore, say
  SLUICE_RETURN_IF_ERROR(work_->Replay());
  optimizer.AdvanceIterations(1);
  SLUICE_ASSIGN_OR_RETURN(double sum, b.Sum(per_example_));
  for (const auto& m : model_->compiled_.metrics) {
    SLUICE_RETURN_IF_ERROR(m->UpdateState(b, y_, predictions_));
  }
  return sum / static_cast<double>(per_example_.num_elements());
}

}  // namespace sluice::nn
