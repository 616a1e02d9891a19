// What the backend's bandwidth-bound kernels share: element types chosen at
// compile time (float or bfloat16 bits, so a loop has no per-element type
// branch) and runs of N neighbouring elements moved as one vector access
// (16 bytes per load or store where the run is that long). The arithmetic
// stays per element, so a vector path computes the bits of the scalar one.
// Internal; nvcc only; no state.
#ifndef SLUICE_NN_CUDA_INTERNAL_VECTOR_ACCESS_CUH_
#define SLUICE_NN_CUDA_INTERNAL_VECTOR_ACCESS_CUH_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"

namespace sluice::gpu_backend_internal {

using ::sluice::gpu_internal::BFloat;

// An element as float (exact for both types).
template <typename T>
SLUICE_HD float AsFloat(T v) {
  return ::sluice::gpu_internal::ToFloat(v);
}
// v stored as T: bfloat16 rounded to nearest even, as StoreFloat does.
template <typename T>
SLUICE_HD T FromFloat(float v) {
  if constexpr (std::is_same_v<T, BFloat>) {
    return ::sluice::gpu_internal::FloatToBFloat(v);
  } else {
    return v;
  }
}

// N elements of T, aligned for one access of up to 16 bytes (a 32-byte run
// is two).
template <typename T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Vec {
  T v[N];
};

// The bytes a Vec<T, N> at p needs p aligned to.
template <typename T, int N>
constexpr uintptr_t kVecAlign = alignof(Vec<T, N>);

// True when p may be read or written as Vec<T, N>.
template <typename T, int N>
inline bool VecAligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kVecAlign<T, N> == 0;
}

// Elements p[0, N) in one access; p aligned as VecAligned says.
template <typename T, int N>
SLUICE_HD Vec<T, N> LoadVec(const T* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const Vec<T, N>*>(p);
#else
  Vec<T, N> r;
  memcpy(r.v, p, sizeof r.v);
  return r;
#endif
}

template <typename T, int N>
SLUICE_HD void StoreVec(T* p, const Vec<T, N>& x) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<Vec<T, N>*>(p) = x;
#else
  memcpy(p, x.v, sizeof x.v);
#endif
}

// Calls fn(T{}) with float for a float32 tensor, BFloat for a bfloat16 one.
template <typename Fn>
int VisitFloatType(bool bf16, Fn&& fn) {
  return bf16 ? fn(BFloat{}) : fn(float{});
}

}  // namespace sluice::gpu_backend_internal

#endif  // SLUICE_NN_CUDA_INTERNAL_VECTOR_ACCESS_CUH_
