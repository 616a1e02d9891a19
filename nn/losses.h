// Losses, with Keras's names and its default reduction (the mean over the
// batch, "sum_over_batch_size").
//
// Custom losses subclass Loss and implement Compute() with the backend's
// operations (or, on the CPU, plain loops over the tensors' data).
//
// Thread-safety: the built-in losses are stateless; Compute() may run
// concurrently on different outputs.
#ifndef SLUICE_NN_LOSSES_H_
#define SLUICE_NN_LOSSES_H_

#include <string>

#include "sluice/core/result.h"
#include "sluice/nn/backend.h"

namespace sluice::nn {

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string name() const = 0;
  // The mean loss over the batch of predictions `pred` against `labels`,
  // and, when `dpred` is non-null, its gradient with respect to `pred`
  // (allocated by Compute with pred's shape).
  virtual Result<double> Compute(Backend& backend, const DeviceTensor& pred,
                                 const DeviceTensor& labels, DeviceTensor* dpred) = 0;
  // The per-example losses [batch] and dpred as Compute gives them, without
  // reading anything back (the mean is their sum over the batch size): what
  // a captured training step records (Sequential::CaptureTrainStep). The
  // default is InvalidArgument; the built-in losses implement it.
  virtual Result<DeviceTensor> ComputePerExample(Backend& backend, const DeviceTensor& pred,
                                                 const DeviceTensor& labels, DeviceTensor* dpred);
};

// Integer class ids [n] or [n, 1] against scores [n, classes]: logits with
// from_logits, else probabilities (renormalized and clipped as Keras).
class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(bool from_logits = false) : from_logits_(from_logits) {}
  std::string name() const override { return "sparse_categorical_crossentropy"; }
  Result<double> Compute(Backend& backend, const DeviceTensor& pred, const DeviceTensor& labels,
                         DeviceTensor* dpred) override;
  Result<DeviceTensor> ComputePerExample(Backend& backend, const DeviceTensor& pred,
                                         const DeviceTensor& labels, DeviceTensor* dpred) override;

 private:
  bool from_logits_;
};

// Distributions (one-hot or soft) [n, classes] against scores.
class CategoricalCrossentropy : public Loss {
 public:
  explicit CategoricalCrossentropy(bool from_logits = false) : from_logits_(from_logits) {}
  std::string name() const override { return "categorical_crossentropy"; }
  Result<double> Compute(Backend& backend, const DeviceTensor& pred, const DeviceTensor& labels,
                         DeviceTensor* dpred) override;
  Result<DeviceTensor> ComputePerExample(Backend& backend, const DeviceTensor& pred,
                                         const DeviceTensor& labels, DeviceTensor* dpred) override;

 private:
  bool from_logits_;
};

// mean((pred - target)²) per example, then over the batch. Integer targets
// are cast to float32.
class MeanSquaredError : public Loss {
 public:
  std::string name() const override { return "mean_squared_error"; }
  Result<double> Compute(Backend& backend, const DeviceTensor& pred, const DeviceTensor& labels,
                         DeviceTensor* dpred) override;
  Result<DeviceTensor> ComputePerExample(Backend& backend, const DeviceTensor& pred,
                                         const DeviceTensor& labels, DeviceTensor* dpred) override;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_LOSSES_H_
