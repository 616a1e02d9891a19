// A convolution as a one-operation graph of cuDNN's graph (backend) API:
// the engines cuDNN's heuristics offer for it, timed on the call's own
// buffers, the fastest kept as an execution plan. The graph API offers
// engines the legacy API does not for NHWC data (FFT and Winograd
// engines that transpose internally, newer implicit-GEMM kernels), which
// is where PyTorch's float32 convolutions find their speed.
//
// Tensors are NHWC ([n, c, h, w] dims with channel-last strides), the
// filter KRSC, cross-correlation with symmetric padding, float32
// accumulation; the three tensors of every op are named by role: X (x, or
// dx for kBackwardData), W (the filter, or dw for kBackwardFilter), Y (y,
// or dy for the two backward ops).
//
// Internal to nn/cuda (includes cudnn.h). Thread-safety: a plan may be
// executed from any thread, one execution at a time per cuDNN handle.
#ifndef SLUICE_NN_CUDA_INTERNAL_CUDNN_GRAPH_H_
#define SLUICE_NN_CUDA_INTERNAL_CUDNN_GRAPH_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/nn/cuda/internal/cudnn_api.h"
#include "sluice/nn/kit/conv_checks.h"

namespace sluice::gpu_backend_internal {

// A finalized execution plan and the descriptors it was built from (kept
// alive with it). Owned by the algorithm cache of one backend.
class GraphConvPlan {
 public:
  GraphConvPlan(const CudnnApi& api, std::vector<std::shared_ptr<void>> keep, void* plan,
                size_t workspace, std::string name, bool deterministic);
  GraphConvPlan(const GraphConvPlan&) = delete;
  GraphConvPlan& operator=(const GraphConvPlan&) = delete;

  size_t workspace() const { return workspace_; }
  // "engine 12 [FFT]": cuDNN's global engine index and its numerical notes.
  const std::string& name() const { return name_; }
  bool deterministic() const { return deterministic_; }

  // Queues the convolution on the handle's stream. REQUIRES: Aligned(x, w,
  // y); `workspace` holds workspace() bytes (or is null when that is 0).
  Status Execute(cudnnHandle_t handle, void* x, void* w, void* y, void* workspace) const;

  // Whether the pointers meet the plan's alignment (16 bytes).
  static bool Aligned(const void* x, const void* w, const void* y);

 private:
  const CudnnApi& api_;
  std::vector<std::shared_ptr<void>> keep_;  // op graph, engine config, plan
  void* plan_;
  size_t workspace_;
  std::string name_;
  bool deterministic_;
};

struct GraphConvChoice {
  std::unique_ptr<GraphConvPlan> plan;
  float time_ms = 0;  // its timed run
  int timed = 0;      // engine configurations that ran
  int offered = 0;    // configurations cuDNN's heuristics offered
};

// Builds op on g (bfloat16 data with bf16, else float32) and times the
// engine configurations cuDNN's heuristics offer (mode A, then the
// fallback list; at most 16, within about 1 s), skipping those the policy excludes: for
// float32, tensor-core (TF32) and down-converting engines; reduced-
// precision reductions; runtime-compiled engines (NVRTC, seconds to
// build); non-deterministic ones under SLUICE_CUDNN_DETERMINISTIC=1; and
// any needing more than ws_size bytes of workspace. Each is run on the
// given buffers between CUDA events on `stream` (a warm-up run, then a
// timed one unless the warm-up was far slower than the best so far); the
// fastest is returned. NotFound when none ran. The outputs' contents are
// left undefined. REQUIRES: the handle is bound to `stream`, which is not
// capturing; g fits cuDNN's int dims with symmetric padding.
Result<GraphConvChoice> FindGraphConvPlan(const CudnnApi& api, cudnnHandle_t handle, void* stream,
                                          ConvOp op, const nn::kit::ConvGeometry& g, bool bf16,
                                          void* x, void* w, void* y, void* ws, size_t ws_size);

// `run`'s time on `stream` in ms as FindGraphConvPlan times engines (a
// warm-up, then one run between events), for comparing another way of
// doing the same work. REQUIRES: stream not capturing.
Result<float> TimeOnStream(void* stream, const std::function<Status()>& run);

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_CUDNN_GRAPH_H_
