// GpuBackend::CrossEntropy / MeanSquaredError: the checks of
// nn/internal/train_checks.h, then the row and element loops of
// internal/train_kernels.h. Class ids live in device memory, so a bad one
// is found by the kernel and reported at the next wait (gpu/nn_backend.h):
// that row's loss is NaN and its dpred row zero.
#include "sluice/gpu/backend/gpu_backend.h"
#include "sluice/gpu/backend/internal/train_kernels.h"
#include "sluice/nn/internal/float32_staging.h"
#include "sluice/nn/internal/train_checks.h"

namespace sluice::gpu::backend {

using internal::LabelKind;

Status GpuBackend::CrossEntropy(const DeviceTensor& pred, const DeviceTensor& labels,
                                bool from_logits, float grad_scale, DeviceTensor* loss,
                                DeviceTensor* dpred) {
  if (nn::internal::AnyBFloat16({&pred, &labels, loss, dpred})) {
    return nn::internal::in_float32::CrossEntropy(*this, pred, labels, from_logits, grad_scale,
                                                  loss, dpred);
  }
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckCrossEntropy(device(), pred, labels, loss, dpred));
  internal::CrossEntropyArgs a;
  a.pred = pred.data<float>();
  a.labels = labels.raw_data();
  a.labels_kind = labels.dtype() == DType::kInt32   ? LabelKind::kInt32
                  : labels.dtype() == DType::kInt64 ? LabelKind::kInt64
                                                    : LabelKind::kDense;
  a.from_logits = from_logits;
  a.grad_scale = grad_scale;
  a.n = pred.dim(0);
  a.c = pred.dim(1);
  a.loss = loss->data<float>();
  a.error = deferred_error();
  if (a.n == 0) return Status::OK();
  DeviceTensor stats;  // (lse, Σt) or (1 / Σp, Σ g q) per row, for the gradient pass
  if (dpred != nullptr) {
    a.dpred = dpred->data<float>();
    SLUICE_ASSIGN_OR_RETURN(stats, Scratch(DType::kFloat32, Shape{a.n, 2}));
    a.row_stats = stats.data<float>();
  }
  return Launch("CrossEntropy", [a](KernelTarget t) { return internal::RunCrossEntropy(a, t); });
}

Status GpuBackend::MeanSquaredError(const DeviceTensor& pred, const DeviceTensor& target,
                                    float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) {
  if (nn::internal::AnyBFloat16({&pred, &target, loss, dpred})) {
    return nn::internal::in_float32::MeanSquaredError(*this, pred, target, grad_scale, loss, dpred);
  }
  SLUICE_RETURN_IF_ERROR(nn::internal::CheckMeanSquaredError(device(), pred, target, loss, dpred));
  internal::MeanSquaredErrorArgs a;
  a.pred = pred.data<float>();
  a.target = target.data<float>();
  a.grad_scale = grad_scale;
  a.n = pred.dim(0);
  a.d = a.n == 0 ? 0 : pred.num_elements() / a.n;
  a.inv_d = a.d == 0 ? 0.0f : 1.0f / static_cast<float>(a.d);
  a.loss = loss->data<float>();
  a.dpred = dpred != nullptr ? dpred->data<float>() : nullptr;
  if (a.n == 0) return Status::OK();
  return Launch("MeanSquaredError",
                [a](KernelTarget t) { return internal::RunMeanSquaredError(a, t); });
}

}  // namespace sluice::gpu::backend
