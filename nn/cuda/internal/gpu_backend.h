// GpuBackend: nn::Backend on a Device (see nn/cuda/cuda_backend.h for the
// public contract). Internal.
//
// Each method checks its arguments on the host (nn/kit/ checks, the
// same messages as the CPU backend), then queues kernels on stream_ with
// Launch(). The definitions are spread over nn/cuda/*.cc, one family
// per file, with their kernels in nn/cuda/internal/*.cu.
//
// Thread-safety: as nn::Backend. Launches from several threads go to the
// one stream in the order of the calls; the deferred-error record and the
// library handles are guarded by mutexes.
#ifndef SLUICE_NN_CUDA_INTERNAL_GPU_BACKEND_H_
#define SLUICE_NN_CUDA_INTERNAL_GPU_BACKEND_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/device/cuda/launch.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/stream.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/batch_feed.h"
#include "sluice/nn/cuda/internal/deferred_error.h"
#include "sluice/nn/kit/backend_checks.h"

namespace sluice::gpu::backend {

using gpu_backend_internal::DeferredError;
using KernelTarget = gpu_internal::KernelTarget;

class GpuBackend final : public nn::Backend {
 public:
  // Tensors are tagged `nn_device` (nn/cuda/cuda_backend.h's NewNnBackend).
  static Result<std::unique_ptr<GpuBackend>> Create(const Device& device, Device nn_device);
  ~GpuBackend() override;

  Device device() const override { return nn_device_; }
  std::string name() const override;
  // Kernels run on the device; the count is kept for the interface only.
  int num_threads() const override { return num_threads_.load(std::memory_order_relaxed); }
  void SetNumThreads(int n) override;

  Result<DeviceTensor> Allocate(DType dtype, const Shape& shape) override;
  Result<DeviceTensor> ToDevice(const Tensor& host) override;
  Result<Tensor> ToHost(const DeviceTensor& x) override;
  Status CopyFromHost(const Tensor& host, DeviceTensor* dst) override;
  Status Copy(const DeviceTensor& src, DeviceTensor* dst) override;
  Status Synchronize() override;

  Status Fill(float value, DeviceTensor* x) override;
  Status Cast(const DeviceTensor& x, float scale, DeviceTensor* y) override;
  Status Axpby(float alpha, const DeviceTensor& x, float beta, DeviceTensor* y) override;
  Status Multiply(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor* y) override;
  Status DropoutMask(float rate, uint64_t seed, uint64_t stream, DeviceTensor* mask) override;
  Status DropoutMaskFromCounter(float rate, uint64_t seed, const DeviceTensor& stream_counter,
                                DeviceTensor* mask) override;

  Status MatMul(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b, bool transpose_b,
                float beta, DeviceTensor* c) override;
  Status BiasAdd(const DeviceTensor& bias, DeviceTensor* y) override;
  Status BiasGrad(const DeviceTensor& dy, float beta, DeviceTensor* db) override;

  Status Conv2DForward(const DeviceTensor& x, const DeviceTensor& filter, const DeviceTensor* bias,
                       const nn::Window2D& window, DeviceTensor* y) override;
  Status Conv2DBackwardData(const DeviceTensor& dy, const DeviceTensor& filter,
                            const nn::Window2D& window, DeviceTensor* dx) override;
  Status Conv2DBackwardFilter(const DeviceTensor& x, const DeviceTensor& dy,
                              const nn::Window2D& window, DeviceTensor* dfilter,
                              DeviceTensor* dbias) override;

  Status Pool2DForward(nn::PoolMode mode, const DeviceTensor& x, const nn::Window2D& window,
                       DeviceTensor* y, DeviceTensor* workspace) override;
  Status Pool2DBackward(nn::PoolMode mode, const DeviceTensor& x, const DeviceTensor& y,
                        const DeviceTensor& dy, const DeviceTensor& workspace,
                        const nn::Window2D& window, DeviceTensor* dx) override;

  Status ActivationForward(nn::Activation f, const DeviceTensor& x, DeviceTensor* y) override;
  Status ActivationBackward(nn::Activation f, const DeviceTensor& y, const DeviceTensor& dy,
                            DeviceTensor* dx) override;

  Status CrossEntropy(const DeviceTensor& pred, const DeviceTensor& labels, bool from_logits,
                      float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) override;
  Status MeanSquaredError(const DeviceTensor& pred, const DeviceTensor& target, float grad_scale,
                          DeviceTensor* loss, DeviceTensor* dpred) override;

  Status SgdUpdate(const DeviceTensor& grad, float learning_rate, float momentum, bool nesterov,
                   DeviceTensor* var, DeviceTensor* velocity) override;
  Status AdamUpdate(const DeviceTensor& grad, const nn::AdamStep& step, DeviceTensor* var,
                    DeviceTensor* m, DeviceTensor* v) override;

  Status AddToCounter(int64_t delta, DeviceTensor* counter) override;
  Result<std::unique_ptr<nn::CapturedWork>> Capture(const std::function<Status()>& fn) override;
  bool can_capture() const override { return true; }

  Result<double> Sum(const DeviceTensor& x) override;
  Result<int64_t> CountArgMaxMatches(const DeviceTensor& scores,
                                     const DeviceTensor& labels) override;

  // --- For the method files ----------------------------------------------------
  // The float types the kernels take (each tensor float32 or bfloat16,
  // read and written as it is), and a tensor's flag for them.
  static constexpr nn::kit::FloatTypes kFloatOrBf16 = nn::kit::FloatTypes::kFloat32OrBFloat16;
  static bool IsBf16(const DeviceTensor& t) { return t.dtype() == DType::kBFloat16; }
  const Device& gpu_device() const { return device_; }
  bool on_gpu() const { return !device_.is_cpu(); }
  Stream& stream() { return *stream_; }

  // Queues run(target) on the stream (device/cuda/launch.h); a launch
  // error names `method`.
  template <typename Run>
  Status Launch(std::string_view method, Run run) {
    return gpu_internal::Enqueue(*stream_, method, std::move(run));
  }

  // Where kernels record what they found wrong (device memory).
  DeferredError* deferred_error() const { return deferred_device_; }

  // Copies `bytes` bytes from device memory to host memory and waits; then
  // reports a deferred error if a kernel recorded one (and clears it). The
  // waiting methods use it, so an error surfaces at the first wait after it.
  Status CopyToHostAndWait(const void* device_src, void* host_dst, size_t bytes);

  // A device scratch tensor for one call's intermediate results. Dropping
  // the handle right after queuing the launches that use it is safe: the
  // block is reused only by later work on this stream.
  Result<DeviceTensor> Scratch(DType dtype, const Shape& shape) { return Allocate(dtype, shape); }

  // State a method family keeps per backend (a cuBLAS or cuDNN handle bound
  // to the stream, cached plans): made by `make()` (returning
  // Result<std::shared_ptr<T>>) on first use, then shared; destroyed with
  // the backend, after its stream has drained and before the stream goes.
  // A failed make() is returned and tried again next time. Thread-safe;
  // T's own methods are not made thread-safe by this.
  enum class Slot { kBlas, kDnn, kCount };
  template <typename T, typename Make>
  Result<T*> State(Slot slot, Make make) {
    std::lock_guard lock(state_mu_);
    std::shared_ptr<void>& s = state_[static_cast<int>(slot)];
    if (s == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<T> made, make());
      s = std::move(made);
    }
    return static_cast<T*>(s.get());
  }

 private:
  GpuBackend(const Device& device, Device nn_device);
  // MatMul of bfloat16 a and b into float32 or bfloat16 c with cuBLAS
  // (GemmEx, float32 accumulation); in float32 staging where cuBLAS cannot.
  Status MatMulBf16(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
                    bool transpose_b, float beta, DeviceTensor* c);
  // DropoutMask with a fixed stream, or (stream_counter set) the counter's.
  Status Dropout(float rate, uint64_t seed, uint64_t stream, const int64_t* stream_counter,
                 DeviceTensor* mask);
  // Capture: the stream records instead of running, and Allocate keeps
  // every tensor it hands out until EndCapture returns them.
  Status BeginCapture();
  Result<std::unique_ptr<Graph>> EndCapture(std::vector<DeviceTensor>* kept);
  Status Init();
  // Waits for the stream, then turns a deferred error into a Status.
  Status WaitAndCheck();

  Device device_;
  Device nn_device_;
  std::atomic<int> num_threads_{1};
  std::unique_ptr<Stream> stream_;
  DeviceTensor deferred_block_;  // holds deferred_device_
  DeferredError* deferred_device_ = nullptr;
  std::mutex wait_mu_;           // one WaitAndCheck at a time
  DeferredError deferred_host_;  // guarded by wait_mu_
  std::mutex capture_mu_;
  bool capturing_ = false;                  // guarded by capture_mu_
  std::vector<DeviceTensor> capture_keep_;  // guarded by capture_mu_
  std::mutex state_mu_;
  std::shared_ptr<void> state_[static_cast<int>(Slot::kCount)];  // guarded by state_mu_
};

// The GPU's batch feed (nn::RegisterBatchFeed): for a GpuBackend and
// depth >= 1, input.map(select).prefetch_to_device(its device, depth)
// (batch_feed.cc); otherwise nullptr, the default feed.
Result<std::unique_ptr<nn::BatchFeed>> MakePrefetchFeed(nn::Backend& backend, const Dataset& input,
                                                        nn::FeedSelect& select, int64_t depth);

}  // namespace sluice::gpu::backend

#endif  // SLUICE_NN_CUDA_INTERNAL_GPU_BACKEND_H_
