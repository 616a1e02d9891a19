// What the nn backend's .cu files share: kernel_util.cuh's ForEach and its
// one-rounding-per-step float operations, named in the backend's
// namespace. Internal; nvcc only.
#ifndef SLUICE_GPU_BACKEND_INTERNAL_BACKEND_KERNEL_UTIL_CUH_
#define SLUICE_GPU_BACKEND_INTERNAL_BACKEND_KERNEL_UTIL_CUH_

#include "sluice/gpu/internal/kernel_util.cuh"

namespace sluice::gpu::backend::internal {

using ::sluice::gpu::internal::Add;
using ::sluice::gpu::internal::Div;
using ::sluice::gpu::internal::FloatView;
using ::sluice::gpu::internal::ForEach;
using ::sluice::gpu::internal::LoadFloat;
using ::sluice::gpu::internal::Mul;
using ::sluice::gpu::internal::StoreFloat;
using ::sluice::gpu::internal::Sub;

}  // namespace sluice::gpu::backend::internal

#endif  // SLUICE_GPU_BACKEND_INTERNAL_BACKEND_KERNEL_UTIL_CUH_
