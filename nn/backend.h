// Backend: the compute interface of the training core.
//
// Layers, losses, optimizers and metrics are written once against this
// interface; each device kind provides one implementation. The CPU backend
// (nn/cpu/, oneDNN) is built in; the GPU backend (nn/cuda/cuda_backend.h: its
// own kernels, cuBLAS and cuDNN) registers itself with
// gpu::RegisterNnBackend(). nn/ never includes a device library's headers.
//
// Conventions for every method:
// - Tensors are dense row-major DeviceTensors on this backend's device;
//   float32 unless a method says otherwise. Images are NHWC; convolution
//   filters are HWIO [kh, kw, in, out] (Keras's layout, also in checkpoints).
// - Mixed precision (nn/policy.h): wherever a method takes float32 data
//   other than optimizer state (the Sgd/Adam tensors stay float32), any of
//   its float tensors may be bfloat16 instead, mixed freely. Values are
//   read as float, computed with float32 accumulation and rounded to each
//   output's dtype once (nearest even). A backend without a bfloat16 kernel
//   for a case runs it through nn/kit/float32_staging.h.
// - Outputs are caller-allocated (Allocate) with the exact shape the method
//   documents. A shape, dtype or device mismatch is InvalidArgument naming
//   the method and the shapes; nothing is written then.
// - "In place allowed" means an output may be the same tensor as an input.
// - Work is issued in order. On an asynchronous device a method may return
//   before its result is ready; ToHost(), Synchronize(), Sum() and
//   CountArgMaxMatches() wait. A problem only the data shows (a class id
//   out of range) is then returned by the next of those calls instead of
//   the method that queued the work (the GPU backend); shapes, dtypes and
//   devices are always checked by the method itself.
//
// Thread-safety: a Backend may be called from several threads at once only
// if the threads work on disjoint output tensors. Each call uses the
// backend's own thread pool (num_threads()), not the caller's pipeline.
#ifndef SLUICE_NN_BACKEND_H_
#define SLUICE_NN_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sluice/core/device.h"
#include "sluice/core/device_tensor.h"
#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/nn/window.h"

namespace sluice::nn {

enum class Activation { kLinear, kRelu, kSigmoid, kTanh, kSoftmax };
// "linear", "relu", "sigmoid", "tanh", "softmax" (Keras's names; "" and
// "none" are linear). InvalidArgument otherwise.
Result<Activation> ParseActivation(std::string_view name);
std::string_view ActivationName(Activation a);

// Adam's hyperparameters for one update; `step` counts from 1.
struct AdamStep {
  float learning_rate = 0.001f;
  float beta_1 = 0.9f;
  float beta_2 = 0.999f;
  float epsilon = 1e-7f;
  int64_t step = 1;
  // When set: an int64 scalar on the backend's device holding the step,
  // read when the update runs instead of `step` (so a captured update
  // follows the count: Backend::Capture).
  const DeviceTensor* step_counter = nullptr;
};

// Work recorded by Backend::Capture, run again as a whole by Replay().
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  // Queues one run of the recorded work; returns at once.
  virtual Status Replay() = 0;
  // Operations recorded (kernels, copies).
  virtual int64_t num_nodes() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // "cpu (oneDNN 2.6.3, 2 threads)".
  virtual std::string name() const = 0;
  // Threads one call may use. The default is the cores this process may use.
  virtual int num_threads() const = 0;
  virtual void SetNumThreads(int n) = 0;

  // --- Memory --------------------------------------------------------------
  // Uninitialized elements. ResourceExhausted naming the size if the device
  // cannot hold them.
  virtual Result<DeviceTensor> Allocate(DType dtype, const Shape& shape) = 0;
  // A device copy of a numeric host tensor (the CPU backend shares its
  // bytes instead of copying).
  virtual Result<DeviceTensor> ToDevice(const Tensor& host) = 0;
  // A host copy (the CPU backend shares). Waits for pending work.
  virtual Result<Tensor> ToHost(const DeviceTensor& x) = 0;
  // Copies `host` into `dst`: same dtype and element count.
  virtual Status CopyFromHost(const Tensor& host, DeviceTensor* dst) = 0;
  // Copies `src` into `dst`: same dtype and element count.
  virtual Status Copy(const DeviceTensor& src, DeviceTensor* dst) = 0;
  // Waits until every call issued so far has finished.
  virtual Status Synchronize() = 0;

  // Allocate() then Fill(0) (any numeric dtype is zeroed).
  Result<DeviceTensor> Zeros(DType dtype, const Shape& shape);

  // --- Elementwise -----------------------------------------------------------
  // Every element of a float32 tensor set to `value`.
  virtual Status Fill(float value, DeviceTensor* x) = 0;
  // y = float(x) * scale, for x of any numeric dtype; y float32 of x's shape.
  virtual Status Cast(const DeviceTensor& x, float scale, DeviceTensor* y) = 0;
  // y = alpha * x + beta * y (same shape). beta == 0 ignores y's old values.
  virtual Status Axpby(float alpha, const DeviceTensor& x, float beta, DeviceTensor* y) = 0;
  // y = a * b elementwise (same shape). In place allowed.
  virtual Status Multiply(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor* y) = 0;
  // Inverted dropout mask: each element independently 1 / (1 - rate) with
  // probability 1 - rate, else 0, drawn from Rng(seed, stream) so the mask
  // is reproducible. REQUIRES 0 <= rate < 1.
  virtual Status DropoutMask(float rate, uint64_t seed, uint64_t stream, DeviceTensor* mask) = 0;
  // The same with the stream read from `stream_counter` (an int64 scalar on
  // this device) when the mask is drawn, so a recorded step draws a new
  // mask at each replay (Capture).
  virtual Status DropoutMaskFromCounter(float rate, uint64_t seed,
                                        const DeviceTensor& stream_counter, DeviceTensor* mask) = 0;

  // --- Dense algebra ---------------------------------------------------------
  // c = op(a) · op(b) + beta · c for 2-D a, b, c; op transposes when asked.
  // op(a) is [m, k], op(b) [k, n], c [m, n].
  virtual Status MatMul(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
                        bool transpose_b, float beta, DeviceTensor* c) = 0;
  // y[..., j] += bias[j]; bias has y's last dimension.
  virtual Status BiasAdd(const DeviceTensor& bias, DeviceTensor* y) = 0;
  // db[j] = Σ over all other indices of dy[..., j]  + beta · db[j].
  virtual Status BiasGrad(const DeviceTensor& dy, float beta, DeviceTensor* db) = 0;

  // --- Convolution (NHWC x, HWIO filter, NHWC y) ---------------------------
  // y = conv(x, filter) (+ bias when non-null; bias is [out]). y's shape is
  // Conv2DOutputShape(x.shape(), filter.shape(), window).
  virtual Status Conv2DForward(const DeviceTensor& x, const DeviceTensor& filter,
                               const DeviceTensor* bias, const Window2D& window,
                               DeviceTensor* y) = 0;
  // dx (x's shape) from dy and the filter.
  virtual Status Conv2DBackwardData(const DeviceTensor& dy, const DeviceTensor& filter,
                                    const Window2D& window, DeviceTensor* dx) = 0;
  // dfilter (the filter's shape) and, when non-null, dbias ([out]) from x
  // and dy. Both are overwritten, not accumulated.
  virtual Status Conv2DBackwardFilter(const DeviceTensor& x, const DeviceTensor& dy,
                                      const Window2D& window, DeviceTensor* dfilter,
                                      DeviceTensor* dbias) = 0;

  // --- Pooling (NHWC) --------------------------------------------------------
  // y's shape is Pool2DOutputShape(x.shape(), window). When `workspace` is
  // non-null (training) the backend stores in it whatever Pool2DBackward
  // needs (it allocates it; the caller only keeps it). Average pooling
  // divides by the number of elements inside the input (TensorFlow's SAME
  // padding semantics); max pooling ignores padding.
  virtual Status Pool2DForward(PoolMode mode, const DeviceTensor& x, const Window2D& window,
                               DeviceTensor* y, DeviceTensor* workspace) = 0;
  // dx (x's shape) from dy, given the forward call's x, y and workspace.
  // For max pooling, the gradient goes to the first maximum of each window,
  // as in TensorFlow.
  virtual Status Pool2DBackward(PoolMode mode, const DeviceTensor& x, const DeviceTensor& y,
                                const DeviceTensor& dy, const DeviceTensor& workspace,
                                const Window2D& window, DeviceTensor* dx) = 0;

  // --- Activations -----------------------------------------------------------
  // y = f(x); softmax is over the last axis. In place allowed.
  virtual Status ActivationForward(Activation f, const DeviceTensor& x, DeviceTensor* y) = 0;
  // dx = f'(x) · dy computed from the forward output y (relu: y > 0;
  // sigmoid: y(1 - y); tanh: 1 - y²; softmax: y ⊙ (dy - Σ dy ⊙ y)).
  // In place allowed (dx may be dy).
  virtual Status ActivationBackward(Activation f, const DeviceTensor& y, const DeviceTensor& dy,
                                    DeviceTensor* dx) = 0;

  // --- Losses ----------------------------------------------------------------
  // Cross-entropy between predictions [n, c] and labels: int32 or int64
  // class ids [n] (or [n, 1]) for the sparse form, or float32 [n, c]
  // distributions. With from_logits the predictions are logits (a stable
  // log-softmax is used); otherwise probabilities, which are renormalized to
  // sum to 1 and clipped to [1e-7, 1 - 1e-7] as Keras does. Writes the
  // per-example loss to `loss` ([n]) and, when non-null, the gradient of
  // grad_scale · Σ loss with respect to the predictions to `dpred`. A class
  // id outside [0, c) is InvalidArgument naming the value and the row.
  virtual Status CrossEntropy(const DeviceTensor& pred, const DeviceTensor& labels,
                              bool from_logits, float grad_scale, DeviceTensor* loss,
                              DeviceTensor* dpred) = 0;
  // Per-example mean over the non-batch dimensions of (pred - target)²
  // (float32, same shape; rank ≥ 1); gradient as CrossEntropy's.
  virtual Status MeanSquaredError(const DeviceTensor& pred, const DeviceTensor& target,
                                  float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) = 0;

  // --- Optimizer updates (Keras's formulas) ----------------------------------
  // velocity = momentum · velocity - lr · grad;
  // var += nesterov ? momentum · velocity - lr · grad : velocity.
  // With momentum == 0, velocity may be null and var -= lr · grad.
  virtual Status SgdUpdate(const DeviceTensor& grad, float learning_rate, float momentum,
                           bool nesterov, DeviceTensor* var, DeviceTensor* velocity) = 0;
  // m += (g - m)(1 - β1); v += (g² - v)(1 - β2);
  // var -= lr · sqrt(1 - β2^t) / (1 - β1^t) · m / (sqrt(v) + ε).
  virtual Status AdamUpdate(const DeviceTensor& grad, const AdamStep& step, DeviceTensor* var,
                            DeviceTensor* m, DeviceTensor* v) = 0;

  // counter (an int64 scalar) += delta, in order with the other work.
  virtual Status AddToCounter(int64_t delta, DeviceTensor* counter) = 0;

  // --- Capture (tf.function) -------------------------------------------------
  // Runs `fn` with this backend recording the work it queues instead of
  // running it, and returns that work for replay (a CUDA graph on a GPU).
  // Tensors allocated meanwhile stay reserved for the recording; calls that
  // wait fail with FailedPrecondition (and so does the capture); values
  // passed by value are frozen into it. InvalidArgument on backends that
  // cannot record (the CPU's runs each call at once).
  virtual Result<std::unique_ptr<CapturedWork>> Capture(const std::function<Status()>& fn);
  // Whether Capture can record (false: it returns InvalidArgument).
  virtual bool can_capture() const { return false; }

  // --- Reductions for metrics ------------------------------------------------
  // Σ x over all elements of a float32 tensor, on the host (waits).
  virtual Result<double> Sum(const DeviceTensor& x) = 0;
  // How many rows of scores [n, c] have their argmax (first maximum) equal
  // to the label: int32/int64 class ids [n] or [n, 1], or float32 [n, c]
  // (compared with its own argmax). Waits.
  virtual Result<int64_t> CountArgMaxMatches(const DeviceTensor& scores,
                                             const DeviceTensor& labels) = 0;
};

// The backend of `device`: the built-in CPU backend for "cpu", a registered
// one otherwise. NotFound naming the device if no backend serves it (for a
// GPU: nn/cuda is not built or gpu::RegisterNnBackend() was not
// called; or no such device). The returned
// backend lives until the process exits.
Result<Backend*> GetBackend(Device device);
// Registers the factory that makes the backend of each device of `kind`
// (called once per device, on first use). For device modules.
void RegisterBackendFactory(DeviceKind kind,
                            std::function<Result<std::unique_ptr<Backend>>(Device)> factory);

}  // namespace sluice::nn

#endif  // SLUICE_NN_BACKEND_H_
