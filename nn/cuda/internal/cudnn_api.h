// The cuDNN functions the backend calls, resolved at run time (dlopen of
// libcudnn.so.9 and dlsym; nn/cuda does not link cuDNN), the
// convolution kinds, and how algorithms are chosen (the SLUICE_CUDNN_*
// environment). Shared by cudnn_lib.cc (the legacy convolution API) and
// cudnn_graph.cc (the graph API's engines). Internal; includes cudnn.h, so
// only .cc files of nn/cuda include it.
//
// Thread-safety: GetCudnnLibrary and GetCudnnPolicy are initialized once
// (thread-safe statics) and read-only after.
#ifndef SLUICE_NN_CUDA_INTERNAL_CUDNN_API_H_
#define SLUICE_NN_CUDA_INTERNAL_CUDNN_API_H_

#include <cudnn.h>

#include <cstddef>
#include <string_view>

#include "sluice/core/status.h"
#include "sluice/nn/cuda/internal/cudnn_lib.h"

namespace sluice::gpu_backend_internal {

// Every cuDNN function used; pointers typed from the prototypes.
#define SLUICE_CUDNN_FUNCTIONS(X)                   \
  X(cudnnGetVersion)                                \
  X(cudnnGetErrorString)                            \
  X(cudnnCreate)                                    \
  X(cudnnDestroy)                                   \
  X(cudnnSetStream)                                 \
  X(cudnnCreateTensorDescriptor)                    \
  X(cudnnSetTensor4dDescriptor)                     \
  X(cudnnDestroyTensorDescriptor)                   \
  X(cudnnCreateFilterDescriptor)                    \
  X(cudnnSetFilter4dDescriptor)                     \
  X(cudnnDestroyFilterDescriptor)                   \
  X(cudnnCreateConvolutionDescriptor)               \
  X(cudnnSetConvolution2dDescriptor)                \
  X(cudnnSetConvolutionMathType)                    \
  X(cudnnDestroyConvolutionDescriptor)              \
  X(cudnnGetConvolution2dForwardOutputDim)          \
  X(cudnnGetConvolutionForwardAlgorithm_v7)         \
  X(cudnnFindConvolutionForwardAlgorithmEx)         \
  X(cudnnGetConvolutionForwardWorkspaceSize)        \
  X(cudnnConvolutionForward)                        \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)    \
  X(cudnnFindConvolutionBackwardDataAlgorithmEx)    \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)   \
  X(cudnnConvolutionBackwardData)                   \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)  \
  X(cudnnFindConvolutionBackwardFilterAlgorithmEx)  \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
  X(cudnnConvolutionBackwardFilter)                 \
  X(cudnnBackendCreateDescriptor)                   \
  X(cudnnBackendDestroyDescriptor)                  \
  X(cudnnBackendSetAttribute)                       \
  X(cudnnBackendGetAttribute)                       \
  X(cudnnBackendFinalize)                           \
  X(cudnnBackendExecute)

struct CudnnApi {
#define SLUICE_CUDNN_POINTER(name) decltype(&::name) name = nullptr;
  SLUICE_CUDNN_FUNCTIONS(SLUICE_CUDNN_POINTER)
#undef SLUICE_CUDNN_POINTER
};

struct CudnnLibrary {
  CudnnLoad load;
  CudnnApi api;  // every pointer set when load.loaded
};

// Opens libcudnn.so.9 (which forwards to its sub-libraries) once; never
// closed, so the pointers stay valid until exit.
const CudnnLibrary& GetCudnnLibrary();

// Internal naming `call` and cuDNN's message for s.
Status CudnnError(const CudnnApi& api, std::string_view call, cudnnStatus_t s);

#define SLUICE_CUDNN_CALL(api, call, ...)                              \
  do {                                                                 \
    const cudnnStatus_t sluice_cudnn_status = (api).call(__VA_ARGS__); \
    if (sluice_cudnn_status != CUDNN_STATUS_SUCCESS) {                 \
      return CudnnError((api), #call, sluice_cudnn_status);            \
    }                                                                  \
  } while (false)

enum class ConvOp { kForward, kBackwardData, kBackwardFilter };

// "Conv2DForward", "Conv2DBackwardData", "Conv2DBackwardFilter".
std::string_view ConvOpName(ConvOp op);

// How algorithms are chosen, from the environment (read once):
//   SLUICE_CUDNN_FIND=0           cuDNN's heuristics only, no measuring
//   SLUICE_CUDNN_GRAPH=0          the legacy API's algorithms only (by
//                                 default the graph API's engines are
//                                 timed beside them and the fastest runs)
//   SLUICE_CUDNN_DETERMINISTIC=1  deterministic algorithms only, where
//                                 cuDNN has one (results the same bits from
//                                 run to run); by default the fastest, as
//                                 TensorFlow and PyTorch choose (atomics
//                                 make the last bits vary between runs)
//   SLUICE_CUDNN_WORKSPACE_MB=N   the most workspace one algorithm may use
//                                 (default 1024)
struct CudnnPolicy {
  bool find = true;
  bool graph = true;
  bool deterministic = false;
  size_t workspace_limit = size_t{1024} << 20;
};
const CudnnPolicy& GetCudnnPolicy();

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_CUDNN_API_H_
