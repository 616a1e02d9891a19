// What the .cu files of the CUDA twins share: ForEach (one element function run as a
// grid-stride CUDA kernel or as a host loop), float arithmetic that rounds
// each step as ops/'s CPU kernels do, and the element types with their
// conversions to and from float. Internal; nvcc only.
#ifndef SLUICE_DEVICE_CUDA_KERNEL_UTIL_CUH_
#define SLUICE_DEVICE_CUDA_KERNEL_UTIL_CUH_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "sluice/device/cuda/kernel_types.h"

#define SLUICE_HD __host__ __device__ inline

namespace sluice::gpu_internal {

template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    f(i);
  }
}

// Calls f(i) for i in [0, n): a kernel on target.cuda_stream, or a loop here.
// f must be a __host__ __device__ function object holding its data by value.
template <typename F>
int ForEach(int64_t n, KernelTarget target, F f) {
  if (n <= 0) return 0;
  if (target.cuda_stream == nullptr) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return 0;
  }
  constexpr int64_t kThreads = 256;
  constexpr int64_t kMaxBlocks = 8192;  // grid-stride beyond ~2M threads
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  ForEachKernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                  static_cast<cudaStream_t>(target.cuda_stream)>>>(n, f);
  return static_cast<int>(cudaGetLastError());
}

template <typename To, typename From>
SLUICE_HD To BitCast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  memcpy(&t, &v, sizeof t);
  return t;
}

// One IEEE operation each, never contracted into an FMA: the roundings of
// the CPU kernels (which are built without FMA). A NaN result is the NaN
// x86's SSE arithmetic gives, so outputs match the CPU's bit for bit: the
// first operand's NaN if it is one, else the second's (quieted), else (an
// invalid operation: inf - inf, 0 / 0, 0 * inf) the default NaN 0xffc00000.
// The GPU's own rule is one canonical NaN 0x7fffffff whatever the operands.
SLUICE_HD float X86Nan(float a, float b) {
  const uint32_t ua = BitCast<uint32_t>(a), ub = BitCast<uint32_t>(b);
  if ((ua & 0x7fffffffu) > 0x7f800000u) return BitCast<float>(ua | 0x00400000u);
  if ((ub & 0x7fffffffu) > 0x7f800000u) return BitCast<float>(ub | 0x00400000u);
  return BitCast<float>(0xffc00000u);
}
#ifdef __CUDA_ARCH__
#define SLUICE_X86_RESULT(r, a, b) ((r) == (r) ? (r) : X86Nan((a), (b)))
#endif
SLUICE_HD float Add(float a, float b) {
#ifdef __CUDA_ARCH__
  const float r = __fadd_rn(a, b);
  return SLUICE_X86_RESULT(r, a, b);
#else
  return a + b;
#endif
}
SLUICE_HD float Sub(float a, float b) {
#ifdef __CUDA_ARCH__
  const float r = __fsub_rn(a, b);
  return SLUICE_X86_RESULT(r, a, b);
#else
  return a - b;
#endif
}
SLUICE_HD float Mul(float a, float b) {
#ifdef __CUDA_ARCH__
  const float r = __fmul_rn(a, b);
  return SLUICE_X86_RESULT(r, a, b);
#else
  return a * b;
#endif
}
SLUICE_HD float Div(float a, float b) {
#ifdef __CUDA_ARCH__
  const float r = __fdiv_rn(a, b);
  return SLUICE_X86_RESULT(r, a, b);
#else
  return a / b;
#endif
}
#ifdef __CUDA_ARCH__
#undef SLUICE_X86_RESULT
#endif

// Where output coordinate i samples an input of in_size along one axis
// (bilinear, half-pixel centers): ops_internal's BilinearTaps, step for step.
struct LerpTap {
  int64_t lower, upper;
  float lerp;
};
SLUICE_HD LerpTap BilinearTap(int64_t i, float scale, int64_t in_size) {
  const float pos = Sub(Mul(Add(static_cast<float>(i), 0.5f), scale), 0.5f);
  const float below = floorf(pos);
  const int64_t lower = static_cast<int64_t>(below);
  const int64_t upper = static_cast<int64_t>(ceilf(pos));
  return LerpTap{lower < 0 ? 0 : lower, upper > in_size - 1 ? in_size - 1 : upper, Sub(pos, below)};
}
// 16-bit floats as their bits; the conversions are those of
// core/float16.h (round to nearest even, quiet NaNs), bit for bit.
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

SLUICE_HD float HalfToFloat(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  const uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return BitCast<float>(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact
    const float v = static_cast<float>(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return BitCast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

SLUICE_HD Half FloatToHalf(float f) {
  const uint32_t x = BitCast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return Half{static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u))};
  }
  if (abs >= 0x477ff000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};  // to inf
  if (abs < 0x38800000u) {  // subnormal or zero: let one float addition round
    const float v = Add(BitCast<float>(abs), 0.5f);
    return Half{static_cast<uint16_t>(sign | (BitCast<uint32_t>(v) - 0x3f000000u))};
  }
  const uint32_t odd = (abs >> 13) & 1u;  // rebias 127 -> 15, 23 -> 10 bits, ties to even
  return Half{static_cast<uint16_t>(sign | ((abs + 0xc8000fffu + odd) >> 13))};
}

SLUICE_HD float BFloatToFloat(BFloat b) {
  return BitCast<float>(static_cast<uint32_t>(b.bits) << 16);
}

SLUICE_HD BFloat FloatToBFloat(float f) {
  const uint32_t x = BitCast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return BFloat{static_cast<uint16_t>((x >> 16) | 0x40u)};
  return BFloat{static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

// Element i of a float32 (bf16 false) or bfloat16 array, as float: exact.
SLUICE_HD float LoadFloat(const void* p, bool bf16, int64_t i) {
  return bf16 ? BFloatToFloat(static_cast<const BFloat*>(p)[i]) : static_cast<const float*>(p)[i];
}
// Stores v as element i of a float32 or bfloat16 array (rounded to nearest
// even): one array load and store for either type, so a kernel reads and
// writes mixed-precision tensors as they are, with the roundings of float32
// staging (nn/kit/float32_staging.h).
SLUICE_HD void StoreFloat(void* p, bool bf16, int64_t i, float v) {
  if (bf16) {
    static_cast<BFloat*>(p)[i] = FloatToBFloat(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}

// A float32 or bfloat16 array read as floats, element j at base + j: the
// row loops' view of a mixed-precision tensor.
struct FloatView {
  const void* p;
  bool bf16;
  int64_t base;
  SLUICE_HD float operator[](int64_t j) const { return LoadFloat(p, bf16, base + j); }
};

// An element as float, as static_cast<float> of the CPU type.
template <typename T>
SLUICE_HD float ToFloat(T v) {
  return static_cast<float>(v);
}
template <>
SLUICE_HD float ToFloat(Half v) {
  return HalfToFloat(v);
}
template <>
SLUICE_HD float ToFloat(BFloat v) {
  return BFloatToFloat(v);
}

// Calls fn(T{}) with the storage type of `type` (bool as uint8_t: its
// values are 0 and 1).
template <typename Fn>
int VisitElemType(ElemType type, Fn&& fn) {
  switch (type) {
    case ElemType::kBool:
    case ElemType::kUInt8: return fn(uint8_t{});
    case ElemType::kInt32: return fn(int32_t{});
    case ElemType::kInt64: return fn(int64_t{});
    case ElemType::kFloat16: return fn(Half{});
    case ElemType::kBFloat16: return fn(BFloat{});
    case ElemType::kFloat32: return fn(float{});
    case ElemType::kFloat64: return fn(double{});
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

// Calls fn(U{}) with an unsigned type of `size` bytes (1, 2, 4 or 8), for
// loops that only move elements.
template <typename Fn>
int VisitElemSize(int size, Fn&& fn) {
  switch (size) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_CUDA_KERNEL_UTIL_CUH_
