// The element loops of the GPU backend's training methods (activations,
// losses, optimizer updates), compiled by nvcc from train_kernels.cu and
// train_loss_kernels.cu: each runs as a CUDA kernel on a stream or, on the
// host device, as a plain loop (device/cuda/kernel_util.cuh's ForEach).
//
// Shared by C++20 (g++) and CUDA C++17 (nvcc) code: plain structs, no
// sluice or CUDA headers beyond the plain ones below. Arguments are checked
// by activations.cc, losses.cc and optimizers.cc; the loops trust them.
// Every Run* returns the cudaError_t of its launches (0 on the host path).
// Arithmetic is the CPU backend's (nn/cpu/), operation for operation, so
// the host path agrees with it to the last bit of expf/logf/tanhf.
#ifndef SLUICE_NN_CUDA_INTERNAL_TRAIN_KERNELS_H_
#define SLUICE_NN_CUDA_INTERNAL_TRAIN_KERNELS_H_

#include <cstdint>

#include "sluice/nn/cuda/internal/deferred_error.h"
#include "sluice/device/cuda/kernel_types.h"

namespace sluice::gpu_backend_internal {

using KernelTarget = gpu_internal::KernelTarget;

// nn::Activation, numbered alike (checked in activations.cc).
enum class ActivationKind : uint8_t { kLinear, kRelu, kSigmoid, kTanh, kSoftmax };

// y = f(x) over `count` elements; softmax over rows of `row` elements (one
// thread per row). y may be x. Each of x and y is float32, or bfloat16
// when its *_bf16 flag is set (read as float, written rounded once, the
// bits of float32 staging; softmax keeps its partial exponentials in float
// registers, not in y).
struct ActivationForwardArgs {
  ActivationKind f = ActivationKind::kLinear;
  const void* x = nullptr;
  void* y = nullptr;
  int64_t count = 0;
  int64_t row = 1;  // softmax: the last dimension, > 0
  bool x_bf16 = false, y_bf16 = false;
};
int RunActivationForward(const ActivationForwardArgs& args, KernelTarget target);

// dx = f'(x) · dy from the forward output y; softmax by rows (one thread
// per row). dx may be dy. float32 or bfloat16 each, as above.
struct ActivationBackwardArgs {
  ActivationKind f = ActivationKind::kLinear;
  const void* y = nullptr;
  const void* dy = nullptr;
  void* dx = nullptr;
  int64_t count = 0;
  int64_t row = 1;  // softmax: the last dimension, > 0
  bool y_bf16 = false, dy_bf16 = false, dx_bf16 = false;
};
int RunActivationBackward(const ActivationBackwardArgs& args, KernelTarget target);

// How CrossEntropy's labels are stored.
enum class LabelKind : uint8_t { kInt32, kInt64, kDense };

// Cross-entropy of pred [n, c] against labels (class ids [n], or float
// distributions [n, c]): loss [n] and, when dpred is non-null, dpred [n, c]
// = grad_scale · dloss/dpred. `row_stats` is scratch of 2n floats that the
// per-row pass leaves for the per-element gradient pass (needed only with
// dpred). A class id outside [0, c) makes that row's loss NaN and its dpred
// row zero, and is recorded in *error (the first one found wins). pred,
// dense labels, loss and dpred are float32, or bfloat16 when flagged (the
// bits of float32 staging).
struct CrossEntropyArgs {
  const void* pred = nullptr;
  const void* labels = nullptr;
  LabelKind labels_kind = LabelKind::kInt32;
  bool from_logits = false;
  float grad_scale = 1.0f;
  int64_t n = 0, c = 1;
  void* loss = nullptr;
  void* dpred = nullptr;       // may be null
  float* row_stats = nullptr;  // 2n floats when dpred is non-null
  DeferredError* error = nullptr;
  bool pred_bf16 = false, labels_bf16 = false, loss_bf16 = false, dpred_bf16 = false;
};
int RunCrossEntropy(const CrossEntropyArgs& args, KernelTarget target);

// loss[i] = mean over the d elements of row i of (pred - target)²;
// dpred (may be null) = grad_scale · 2 / d · (pred - target).
// Each tensor float32, or bfloat16 when flagged.
struct MeanSquaredErrorArgs {
  const void* pred = nullptr;
  const void* target = nullptr;
  float grad_scale = 1.0f;
  int64_t n = 0, d = 0;
  float inv_d = 0.0f;  // 1.0f / d in float, 0 when d == 0 (the CPU backend's)
  void* loss = nullptr;
  void* dpred = nullptr;
  bool pred_bf16 = false, target_bf16 = false, loss_bf16 = false, dpred_bf16 = false;
};
int RunMeanSquaredError(const MeanSquaredErrorArgs& args, KernelTarget target);

// Keras's SGD over `count` elements, one fused pass: with velocity null,
// var -= lr · grad; else velocity = momentum · velocity - lr · grad and var
// += nesterov ? momentum · velocity - lr · grad : velocity.
struct SgdUpdateArgs {
  const float* grad = nullptr;
  float* var = nullptr;
  float* velocity = nullptr;
  int64_t count = 0;
  float learning_rate = 0.0f, momentum = 0.0f;
  bool nesterov = false;
};
int RunSgdUpdate(const SgdUpdateArgs& args, KernelTarget target);

// Keras's Adam over `count` elements, one fused pass: m += (g - m) ·
// one_minus_b1; v += (g² - v) · one_minus_b2; var -= lr_t · m / (sqrt(v) +
// epsilon), lr_t carrying both bias corrections: computed on the host, or,
// when lr_t_on_device is set, read from there (RunAdamRate wrote it).
struct AdamUpdateArgs {
  const float* grad = nullptr;
  float* var = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  int64_t count = 0;
  float lr_t = 0.0f, one_minus_b1 = 0.0f, one_minus_b2 = 0.0f, epsilon = 0.0f;
  const float* lr_t_on_device = nullptr;
};
int RunAdamUpdate(const AdamUpdateArgs& args, KernelTarget target);

// *lr_t = learning_rate · sqrt(1 - beta_2^t) / (1 - beta_1^t) in double,
// rounded once to float (nn/internal's AdamCorrectedRate), with t the
// int64 at *step (values below 1 count as 1).
struct AdamRateArgs {
  const int64_t* step = nullptr;
  float* lr_t = nullptr;
  float learning_rate = 0.0f, beta_1 = 0.0f, beta_2 = 0.0f;
};
int RunAdamRate(const AdamRateArgs& args, KernelTarget target);

// *counter += delta.
struct AddToCounterArgs {
  int64_t* counter = nullptr;
  int64_t delta = 0;
};
int RunAddToCounter(const AddToCounterArgs& args, KernelTarget target);

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_TRAIN_KERNELS_H_
