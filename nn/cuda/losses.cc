// GpuBackend::CrossEntropy / MeanSquaredError: the checks of
// nn/kit/train_checks.h, then the row and element loops of
// internal/train_kernels.h. Class ids live in device memory, so a bad one
// is found by the kernel and reported at the next wait (nn/cuda/cuda_backend.h):
// that row's loss is NaN and its dpred row zero. float32 or bfloat16
// tensors, read and written as they are.
#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/train_kernels.h"
#include "sluice/nn/kit/train_checks.h"

namespace sluice::gpu::backend {

using gpu_backend_internal::LabelKind;

Status GpuBackend::CrossEntropy(const DeviceTensor& pred, const DeviceTensor& labels,
                                bool from_logits, float grad_scale, DeviceTensor* loss,
                                DeviceTensor* dpred) {
  SLUICE_RETURN_IF_ERROR(
      nn::kit::CheckCrossEntropy(device(), pred, labels, loss, dpred, kFloatOrBf16));
  gpu_backend_internal::CrossEntropyArgs a;
  a.pred = pred.raw_data();
  a.pred_bf16 = IsBf16(pred);
  a.labels_bf16 = IsBf16(labels);
  a.loss_bf16 = IsBf16(*loss);
  a.labels = labels.raw_data();
  a.labels_kind = labels.dtype() == DType::kInt32   ? LabelKind::kInt32
                  : labels.dtype() == DType::kInt64 ? LabelKind::kInt64
                                                    : LabelKind::kDense;
  a.from_logits = from_logits;
  a.grad_scale = grad_scale;
  a.n = pred.dim(0);
  a.c = pred.dim(1);
  a.loss = loss->raw_data();
  a.error = deferred_error();
  if (a.n == 0) return Status::OK();
  DeviceTensor stats;  // (lse, Σt) or (1 / Σp, Σ g q) per row, for the gradient pass
  if (dpred != nullptr) {
    a.dpred = dpred->raw_data();
    a.dpred_bf16 = IsBf16(*dpred);
    SLUICE_ASSIGN_OR_RETURN(stats, Scratch(DType::kFloat32, Shape{a.n, 2}));
    a.row_stats = stats.data<float>();
  }
  return Launch("CrossEntropy",
                [a](KernelTarget t) { return gpu_backend_internal::RunCrossEntropy(a, t); });
}

Status GpuBackend::MeanSquaredError(const DeviceTensor& pred, const DeviceTensor& target,
                                    float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) {
  SLUICE_RETURN_IF_ERROR(
      nn::kit::CheckMeanSquaredError(device(), pred, target, loss, dpred, kFloatOrBf16));
  gpu_backend_internal::MeanSquaredErrorArgs a;
  a.pred = pred.raw_data();
  a.target = target.raw_data();
  a.pred_bf16 = IsBf16(pred);
  a.target_bf16 = IsBf16(target);
  a.loss_bf16 = IsBf16(*loss);
  a.grad_scale = grad_scale;
  a.n = pred.dim(0);
  a.d = a.n == 0 ? 0 : pred.num_elements() / a.n;
  a.inv_d = a.d == 0 ? 0.0f : 1.0f / static_cast<float>(a.d);
  a.loss = loss->raw_data();
  a.dpred = dpred != nullptr ? dpred->raw_data() : nullptr;
  a.dpred_bf16 = dpred != nullptr && IsBf16(*dpred);
  if (a.n == 0) return Status::OK();
  return Launch("MeanSquaredError",
                [a](KernelTarget t) { return gpu_backend_internal::RunMeanSquaredError(a, t); });
}

}  // namespace sluice::gpu::backend
