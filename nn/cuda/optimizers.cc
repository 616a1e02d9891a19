// GpuBackend::SgdUpdate / AdamUpdate: the checks of
// nn/kit/train_checks.h, then one fused element loop of
// internal/train_kernels.h. Adam's bias-corrected step size is computed on
// the host, as the CPU backend computes it.
#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/train_kernels.h"
#include "sluice/nn/kit/backend_checks.h"
#include "sluice/nn/kit/train_checks.h"

namespace sluice::gpu::backend {

Status GpuBackend::SgdUpdate(const DeviceTensor& grad, float learning_rate, float momentum,
                             bool nesterov, DeviceTensor* var, DeviceTensor* velocity) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckSgdUpdate(device(), grad, momentum, var, velocity));
  gpu_backend_internal::SgdUpdateArgs a;
  a.grad = grad.data<float>();
  a.var = var->data<float>();
  a.velocity = velocity != nullptr ? velocity->data<float>() : nullptr;
  a.count = grad.num_elements();
  a.learning_rate = learning_rate;
  a.momentum = momentum;
  a.nesterov = nesterov;
  if (a.count == 0) return Status::OK();
  return Launch("SgdUpdate",
                [a](KernelTarget t) { return gpu_backend_internal::RunSgdUpdate(a, t); });
}

Status GpuBackend::AdamUpdate(const DeviceTensor& grad, const nn::AdamStep& step, DeviceTensor* var,
                              DeviceTensor* m, DeviceTensor* v) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckAdamUpdate(device(), grad, step, var, m, v));
  gpu_backend_internal::AdamUpdateArgs a;
  a.grad = grad.data<float>();
  a.var = var->data<float>();
  a.m = m->data<float>();
  a.v = v->data<float>();
  a.count = grad.num_elements();
  a.lr_t = nn::kit::AdamCorrectedRate(step);
  a.one_minus_b1 = 1.0f - step.beta_1;
  a.one_minus_b2 = 1.0f - step.beta_2;
  a.epsilon = step.epsilon;
  if (a.count == 0) return Status::OK();
  if (step.step_counter != nullptr) {
    // The rate from the counter when the update runs (a replayed graph
    // follows it); the scratch float is the step's (kept by a capture).
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor rate, Scratch(DType::kFloat32, Shape{}));
    gpu_backend_internal::AdamRateArgs r{step.step_counter->data<int64_t>(), rate.data<float>(),
                                         step.learning_rate, step.beta_1, step.beta_2};
    SLUICE_RETURN_IF_ERROR(Launch(
        "AdamUpdate", [r](KernelTarget t) { return gpu_backend_internal::RunAdamRate(r, t); }));
    a.lr_t_on_device = rate.data<float>();
  }
  return Launch("AdamUpdate",
                [a](KernelTarget t) { return gpu_backend_internal::RunAdamUpdate(a, t); });
}

Status GpuBackend::AddToCounter(int64_t delta, DeviceTensor* counter) {
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckCounter("AddToCounter", device(), counter));
  gpu_backend_internal::AddToCounterArgs a{counter->data<int64_t>(), delta};
  return Launch("AddToCounter",
                [a](KernelTarget t) { return gpu_backend_internal::RunAddToCounter(a, t); });
}

}  // namespace sluice::gpu::backend
