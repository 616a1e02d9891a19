// Sequential::Replicas' recorded steps (internal/replicas.h): a replica's
// forward and backward, and its optimizer's update, recorded apart so that
// the gradient all-reduce runs eagerly between them.
#include <string>
#include <utility>

#include "sluice/nn/internal/replicas.h"

namespace sluice::nn {

Result<std::unique_ptr<Sequential::Replicas::Captured>> Sequential::Replicas::Record(
    Sequential& m, const DeviceTensor& x, const DeviceTensor& y) {
  Backend& b = m.backend();
  if (!b.can_capture()) {
    return Status::InvalidArgument("Fit: captured steps need a backend that records work; " +
                                   b.name() + " cannot (train eagerly)");
  }
  auto c = std::make_unique<Captured>();
  SLUICE_ASSIGN_OR_RETURN(c->x, b.Allocate(x.dtype(), x.shape()));
  SLUICE_ASSIGN_OR_RETURN(c->y, b.Allocate(y.dtype(), y.shape()));
  Optimizer& optimizer = *m.compiled_.optimizer;
  SLUICE_RETURN_IF_ERROR(optimizer.SyncStepCounter());
  const int64_t iterations = optimizer.iterations();
  Gradients g;
  SLUICE_ASSIGN_OR_RETURN(c->gradients, b.Capture([&]() -> Status {
    return m.ForwardBackward(c->x, c->y, &g, &c->per_example);
  }));
  c->predictions = g.predictions;
  c->variables = g.variables;
  for (DeviceTensor* t : g.grads) c->grads.push_back(*t);
  for (DeviceTensor& t : c->grads) c->grad_ptrs.push_back(&t);
  Result<std::unique_ptr<CapturedWork>> apply = b.Capture([&]() -> Status {
    return optimizer.ApplyGradients(std::span<DeviceTensor* const>(c->grad_ptrs),
                                    std::span<Variable* const>(c->variables));
  });
  // A recorded ApplyGradients counted a step that has not run.
  optimizer.AdvanceIterations(iterations - optimizer.iterations());
  if (!apply.ok()) return apply.status().WithContext("Fit: recording the optimizer's update");
  c->apply = std::move(*apply);
  return c;
}

Result<double> Sequential::Replicas::ReplayGradients(Sequential& m, Captured& c,
                                                     const DeviceTensor& x, const DeviceTensor& y) {
  Backend& b = m.backend();
  SLUICE_RETURN_IF_ERROR(b.Copy(x, &c.x));
  SLUICE_RETURN_IF_ERROR(b.Copy(y, &c.y));
  SLUICE_RETURN_IF_ERROR(c.gradients->Replay());
  SLUICE_ASSIGN_OR_RETURN(double sum, b.Sum(c.per_example));
  return sum / static_cast<double>(c.per_example.num_elements());
}

Status Sequential::Replicas::ReplayApply(Sequential& m, Captured& c) {
  Optimizer& optimizer = *m.compiled_.optimizer;
  SLUICE_RETURN_IF_ERROR(optimizer.SyncStepCounter());  // after a restore, say
  SLUICE_RETURN_IF_ERROR(c.apply->Replay());
  optimizer.AdvanceIterations(1);
  return Status::OK();
}

}  // namespace sluice::nn
