#include "sluice/nn/losses.h"

namespace sluice::nn {

namespace {

Result<DeviceTensor> CrossEntropyPerExample(Backend& backend, const DeviceTensor& pred,
                                            const DeviceTensor& labels, bool from_logits,
                                            bool sparse, DeviceTensor* dpred) {
  if (pred.rank() != 2) {
    return Status::InvalidArgument("cross-entropy: predictions must be [batch, classes], got " +
                                   pred.shape().ToString());
  }
  bool is_int = labels.dtype() == DType::kInt32 || labels.dtype() == DType::kInt64;
  if (sparse != is_int) {
    return Status::InvalidArgument(
        std::string(sparse ? "SparseCategoricalCrossentropy needs int32/int64 class ids"
                           : "CategoricalCrossentropy needs float32 distributions") +
        ", got " + std::string(DTypeName(labels.dtype())) + labels.shape().ToString());
  }
  int64_t n = pred.dim(0);
  if (n == 0) return Status::InvalidArgument("cross-entropy over an empty batch");
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor loss, backend.Allocate(DType::kFloat32, Shape{n}));
  if (dpred != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(*dpred, backend.Allocate(DType::kFloat32, pred.shape()));
  }
  SLUICE_RETURN_IF_ERROR(
      backend.CrossEntropy(pred, labels, from_logits, 1.0f / static_cast<float>(n), &loss, dpred));
  return loss;
}

// The batch mean of per-example losses (waits for them).
Result<double> Mean(Backend& backend, const Result<DeviceTensor>& per_example) {
  SLUICE_RETURN_IF_ERROR(per_example.status());
  SLUICE_ASSIGN_OR_RETURN(double sum, backend.Sum(*per_example));
  return sum / static_cast<double>(per_example->num_elements());
}

}  // namespace

Result<DeviceTensor> Loss::ComputePerExample(Backend&, const DeviceTensor&, const DeviceTensor&,
                                             DeviceTensor*) {
  return Status::InvalidArgument("loss " + name() +
                                 " has no ComputePerExample: it cannot be captured");
}

Result<double> SparseCategoricalCrossentropy::Compute(Backend& backend, const DeviceTensor& pred,
                                                      const DeviceTensor& labels,
                                                      DeviceTensor* dpred) {
  return Mean(backend, ComputePerExample(backend, pred, labels, dpred));
}
Result<DeviceTensor> SparseCategoricalCrossentropy::ComputePerExample(Backend& backend,
                                                                      const DeviceTensor& pred,
                                                                      const DeviceTensor& labels,
                                                                      DeviceTensor* dpred) {
  return CrossEntropyPerExample(backend, pred, labels, from_logits_, true, dpred);
}

Result<double> CategoricalCrossentropy::Compute(Backend& backend, const DeviceTensor& pred,
                                                const DeviceTensor& labels, DeviceTensor* dpred) {
  return Mean(backend, ComputePerExample(backend, pred, labels, dpred));
}
Result<DeviceTensor> CategoricalCrossentropy::ComputePerExample(Backend& backend,
                                                                const DeviceTensor& pred,
                                                                const DeviceTensor& labels,
                                                                DeviceTensor* dpred) {
  return CrossEntropyPerExample(backend, pred, labels, from_logits_, false, dpred);
}

Result<double> MeanSquaredError::Compute(Backend& backend, const DeviceTensor& pred,
                                         const DeviceTensor& labels, DeviceTensor* dpred) {
  return Mean(backend, ComputePerExample(backend, pred, labels, dpred));
}

Result<DeviceTensor> MeanSquaredError::ComputePerExample(Backend& backend, const DeviceTensor& pred,
                                                         const DeviceTensor& labels,
                                                         DeviceTensor* dpred) {
  if (pred.rank() < 1 || pred.dim(0) == 0) {
    return Status::InvalidArgument("MeanSquaredError needs a non-empty batch, got " +
                                   pred.shape().ToString());
  }
  DeviceTensor target = labels;
  if (labels.dtype() != DType::kFloat32) {
    SLUICE_ASSIGN_OR_RETURN(target, backend.Allocate(DType::kFloat32, labels.shape()));
    SLUICE_RETURN_IF_ERROR(backend.Cast(labels, 1.0f, &target));
  }
  if (target.num_elements() == pred.num_elements() && !(target.shape() == pred.shape())) {
    // [n] targets for [n, 1] predictions, as Keras squeezes.
    SLUICE_ASSIGN_OR_RETURN(target, target.Reshape(pred.shape()));
  }
  int64_t n = pred.dim(0);
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor loss, backend.Allocate(DType::kFloat32, Shape{n}));
  if (dpred != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(*dpred, backend.Allocate(DType::kFloat32, pred.shape()));
  }
  SLUICE_RETURN_IF_ERROR(
      backend.MeanSquaredError(pred, target, 1.0f / static_cast<float>(n), &loss, dpred));
  return loss;
}

}  // namespace sluice::nn
