// cuDNN 9 for the GPU backend's convolutions: the library opened at run
// time (dlopen of libcudnn.so.9, each function resolved with dlsym; the
// nn/cuda does not link it), a handle per backend bound to its stream,
// and the three convolution calls of conv.cc. Internal.
//
// No CUDA or cuDNN header here (tests include this file); cudnn_lib.cc has
// them. Thread-safety: everything here may be called from any thread; the
// handle is used by one call at a time.
#ifndef SLUICE_NN_CUDA_INTERNAL_CUDNN_LIB_H_
#define SLUICE_NN_CUDA_INTERNAL_CUDNN_LIB_H_

#include <array>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/kit/conv_checks.h"

namespace sluice::gpu_backend_internal {

// What opening cuDNN found (once per process; never closed).
struct CudnnLoad {
  bool loaded = false;                // the library opened, is version 9, every symbol resolved
  std::string error;                  // why not, when !loaded
  int version = 0;                    // cudnnGetVersion(): 9xxyy
  std::vector<std::string> resolved;  // the functions dlsym found
  std::vector<std::string> missing;   // those it did not
};
const CudnnLoad& LoadCudnn();

// cuDNN's output dims {n, c, h, w} for `g` with g's top/left padding on
// both sides (cudnnGetConvolution2dForwardOutputDim on descriptors set as
// the convolutions set them). Runs on the host, no GPU needed: it checks
// that the descriptor calls reach the sub-libraries. Unavailable when
// cuDNN did not load; Internal naming the failing call.
// With bf16, the descriptors are the bfloat16 path's (bfloat16 data,
// tensor-op math).
Result<std::array<int, 4>> CudnnForwardOutputDims(const nn::kit::ConvGeometry& g,
                                                  bool bf16 = false);

// Builds and finalizes the three convolutions' operation descriptors of
// cuDNN's graph API for g (cudnn_graph.h), the host-side half of that path:
// no GPU needed. Unavailable when cuDNN did not load; Internal naming the
// failing call.
Status CudnnGraphOperationsCheck(const nn::kit::ConvGeometry& g, bool bf16 = false);

// The convolutions with cuDNN on `backend`'s stream. float32 data (bf16
// false) runs with FMA math (no TF32); bfloat16 data (x, dy, the filter and
// y or dx bfloat16) with tensor-op math and float32 accumulation; the
// filter gradient is written as float32 or, when dfilter_bf16, bfloat16.
// Algorithms are measured (cudnnFind*) on the first call of each geometry
// and the fastest kept (SLUICE_CUDNN_FIND, SLUICE_CUDNN_DETERMINISTIC and
// SLUICE_CUDNN_WORKSPACE_MB change that: docs/gpu.md). Filters are HWIO as the
// callers store them (transposed to and from cuDNN's KRSC in scratch);
// outputs are overwritten, bias is the caller's. true when queued; false
// when cuDNN does not serve the call (not on a GPU, cuDNN missing,
// asymmetric padding, sizes beyond its int dims, or a setup step failed),
// and nothing was written: the caller runs its own kernels. An error when
// a cuDNN call failed after work was queued.
Result<bool> CudnnConv2DForward(gpu::backend::GpuBackend& backend, const nn::kit::ConvGeometry& g,
                                const void* x, const void* filter, void* y, bool bf16 = false);
Result<bool> CudnnConv2DBackwardData(gpu::backend::GpuBackend& backend,
                                     const nn::kit::ConvGeometry& g, const void* dy,
                                     const void* filter, void* dx, bool bf16 = false);
Result<bool> CudnnConv2DBackwardFilter(gpu::backend::GpuBackend& backend,
                                       const nn::kit::ConvGeometry& g, const void* x,
                                       const void* dy, void* dfilter, bool bf16 = false,
                                       bool dfilter_bf16 = false);

// The algorithms chosen so far on `backend` (gpu::ConvAlgorithms).
std::vector<gpu::ConvAlgorithm> CudnnAlgorithms(gpu::backend::GpuBackend& backend);

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_CUDNN_LIB_H_
