// Argument checks of the training methods (activations, losses, optimizer
// updates), shared by the CPU backend (nn/cpu/) and the GPU backend
// (nn/cuda/) so both give the same errors. Part of the backend kit
// (nn/kit/); plain functions, thread-safe.
//
// Each check is everything the method verifies before it touches memory:
// tensors non-null, on `device`, float32 (labels: int32, int64 or float32),
// with the shapes the interface documents. A failure is InvalidArgument as
// backend_checks.h describes. What needs the tensors' values (class ids in
// range) is the backends' own business.
#ifndef SLUICE_NN_KIT_TRAIN_CHECKS_H_
#define SLUICE_NN_KIT_TRAIN_CHECKS_H_

#include "sluice/core/device.h"
#include "sluice/core/device_tensor.h"
#include "sluice/core/status.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/kit/backend_checks.h"

namespace sluice::nn::kit {

// ActivationForward: x and y float32 (or each of `types`) of one shape;
// softmax needs rank >= 1.
Status CheckActivationForward(Device device, Activation f, const DeviceTensor& x,
                              const DeviceTensor* y, FloatTypes types = FloatTypes::kFloat32);
// ActivationBackward: y, dy and dx float32 (or each of `types`) of one
// shape; softmax needs rank >= 1.
Status CheckActivationBackward(Device device, Activation f, const DeviceTensor& y,
                               const DeviceTensor& dy, const DeviceTensor* dx,
                               FloatTypes types = FloatTypes::kFloat32);

// CrossEntropy: pred [n, c] with c > 0, loss [n], dpred (optional) pred's
// shape; labels int32/int64 [n] or [n, 1], or float32 [n, c]. pred, loss,
// dpred and float labels float32, or each of `types`.
Status CheckCrossEntropy(Device device, const DeviceTensor& pred, const DeviceTensor& labels,
                         const DeviceTensor* loss, const DeviceTensor* dpred,
                         FloatTypes types = FloatTypes::kFloat32);

// MeanSquaredError: pred and target float32 (or each of `types`) of one
// shape of rank >= 1, dpred (optional) that shape too, loss [n].
Status CheckMeanSquaredError(Device device, const DeviceTensor& pred, const DeviceTensor& target,
                             const DeviceTensor* loss, const DeviceTensor* dpred,
                             FloatTypes types = FloatTypes::kFloat32);

// SgdUpdate: grad and var float32 of one shape; a velocity of that shape
// unless momentum == 0 and velocity is null (plain SGD).
Status CheckSgdUpdate(Device device, const DeviceTensor& grad, float momentum,
                      const DeviceTensor* var, const DeviceTensor* velocity);

// AdamUpdate: grad, var, m and v float32 of one shape; step.step >= 1.
Status CheckAdamUpdate(Device device, const DeviceTensor& grad, const AdamStep& step,
                       const DeviceTensor* var, const DeviceTensor* m, const DeviceTensor* v);

// Adam's step size with both bias corrections, lr · sqrt(1 - β2^t) /
// (1 - β1^t), computed in double (β^t for large t underflows gracefully and
// 1 - β2^t keeps its digits), then rounded to float. REQUIRES step.step >= 1.
float AdamCorrectedRate(const AdamStep& step);

}  // namespace sluice::nn::kit

#endif  // SLUICE_NN_KIT_TRAIN_CHECKS_H_
