// What the nn backend's .cu files share: kernel_util.cuh's ForEach and its
// one-rounding-per-step float operations, named in the backend's
// namespace. Internal; nvcc only.
#ifndef SLUICE_NN_CUDA_INTERNAL_BACKEND_KERNEL_UTIL_CUH_
#define SLUICE_NN_CUDA_INTERNAL_BACKEND_KERNEL_UTIL_CUH_

#include "sluice/device/cuda/kernel_util.cuh"

namespace sluice::gpu_backend_internal {

using ::sluice::gpu_internal::Add;
using ::sluice::gpu_internal::Div;
using ::sluice::gpu_internal::FloatView;
using ::sluice::gpu_internal::ForEach;
using ::sluice::gpu_internal::LoadFloat;
using ::sluice::gpu_internal::Mul;
using ::sluice::gpu_internal::StoreFloat;
using ::sluice::gpu_internal::Sub;

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_BACKEND_KERNEL_UTIL_CUH_
