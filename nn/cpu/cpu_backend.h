// CpuBackend: the built-in Backend for "cpu:0", on oneDNN (internal).
//
// Convolution, pooling and matrix products go through oneDNN primitives,
// created once per shape and cached (a training loop repeats the same
// shapes every step). Elementwise ops, losses, optimizer updates and
// reductions are plain loops, split over OpenMP threads when large.
// Tensors are ordinary host memory: ToDevice/ToHost share bytes.
//
// The definitions are spread over nn/cpu/*.cc, one family per file.
//
// Thread-safety: as Backend (concurrent calls on disjoint outputs). The
// primitive cache is mutex-protected; each call runs on the calling thread
// plus num_threads() - 1 OpenMP workers.
#ifndef SLUICE_NN_CPU_CPU_BACKEND_H_
#define SLUICE_NN_CPU_CPU_BACKEND_H_

#include <atomic>
#include <memory>
#include <string>

#include "sluice/nn/backend.h"

namespace sluice::nn::cpu {

struct DnnlContext;  // dnnl_context.h: engine and primitive cache
class BlockCache;    // block_cache.h

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(Device device);
  ~CpuBackend() override;

  Device device() const override { return device_; }
  std::string name() const override;
  int num_threads() const override { return num_threads_.load(std::memory_order_relaxed); }
  void SetNumThreads(int n) override;

  Result<DeviceTensor> Allocate(DType dtype, const Shape& shape) override;
  Result<DeviceTensor> ToDevice(const Tensor& host) override;
  Result<Tensor> ToHost(const DeviceTensor& x) override;
  Status CopyFromHost(const Tensor& host, DeviceTensor* dst) override;
  Status Copy(const DeviceTensor& src, DeviceTensor* dst) override;
  Status Synchronize() override { return Status::OK(); }

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
                       const Window2D& window, DeviceTensor* y) override;
  Status Conv2DBackwardData(const DeviceTensor& dy, const DeviceTensor& filter,
                            const Window2D& window, DeviceTensor* dx) override;
  Status Conv2DBackwardFilter(const DeviceTensor& x, const DeviceTensor& dy, const Window2D& window,
                              DeviceTensor* dfilter, DeviceTensor* dbias) override;

  Status Pool2DForward(PoolMode mode, const DeviceTensor& x, const Window2D& window,
                       DeviceTensor* y, DeviceTensor* workspace) override;
  Status Pool2DBackward(PoolMode mode, const DeviceTensor& x, const DeviceTensor& y,
                        const DeviceTensor& dy, const DeviceTensor& workspace,
                        const Window2D& window, DeviceTensor* dx) override;

  Status ActivationForward(Activation f, const DeviceTensor& x, DeviceTensor* y) override;
  Status ActivationBackward(Activation f, const DeviceTensor& y, const DeviceTensor& dy,
                            DeviceTensor* dx) override;

  Status CrossEntropy(const DeviceTensor& pred, const DeviceTensor& labels, bool from_logits,
                      float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) override;
  Status MeanSquaredError(const DeviceTensor& pred, const DeviceTensor& target, float grad_scale,
                          DeviceTensor* loss, DeviceTensor* dpred) override;

  Status SgdUpdate(const DeviceTensor& grad, float learning_rate, float momentum, bool nesterov,
                   DeviceTensor* var, DeviceTensor* velocity) override;
  Status AdamUpdate(const DeviceTensor& grad, const AdamStep& step, DeviceTensor* var,
                    DeviceTensor* m, DeviceTensor* v) override;

  Status AddToCounter(int64_t delta, DeviceTensor* counter) override;

  Result<double> Sum(const DeviceTensor& x) override;
  Result<int64_t> CountArgMaxMatches(const DeviceTensor& scores,
                                     const DeviceTensor& labels) override;

 private:
  // Makes OpenMP (ours and oneDNN's) use num_threads() on the calling
  // thread, and returns that count. omp_set_num_threads() is a per-thread
  // setting, so each thread that calls in is set once (and again after a
  // SetNumThreads).
  int UseThreads() const;

  Device device_;
  std::atomic<int> num_threads_;
  std::unique_ptr<DnnlContext> dnnl_;
  std::shared_ptr<BlockCache> blocks_;  // recycles activation-sized blocks
};

}  // namespace sluice::nn::cpu

#endif  // SLUICE_NN_CPU_CPU_BACKEND_H_
