// Fill, Cast, Axpby, Multiply and DropoutMask element loops (dense_kernels.h),
// with Philox4x32-10 as core/rng.cc computes it.
#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"
#include "sluice/nn/cuda/internal/dense_kernels.h"

namespace sluice::gpu_backend_internal {
namespace {

using ::sluice::gpu_internal::BFloat;
using ::sluice::gpu_internal::FloatToBFloat;
using ::sluice::gpu_internal::ToFloat;
using ::sluice::gpu_internal::VisitElemType;

template <typename T>
int ScaledCast(const ScaledCastArgs& a, KernelTarget target) {
  const auto* x = static_cast<const T*>(a.x);
  const float scale = a.scale;
  if (a.y_bfloat16) {
    auto* y = static_cast<BFloat*>(a.y);
    return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
      y[i] = FloatToBFloat(Mul(ToFloat(x[i]), scale));
    });
  }
  auto* y = static_cast<float*>(a.y);
  return ForEach(a.count, target,
                 [=] __host__ __device__(int64_t i) { y[i] = Mul(ToFloat(x[i]), scale); });
}

// core/rng.cc's constants and key derivation (SplitMix64's finalizer).
constexpr uint32_t kPhiloxMul0 = 0xD2511F53u;
constexpr uint32_t kPhiloxMul1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxWeyl0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxWeyl1 = 0xBB67AE85u;

uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Words4 {
  uint32_t w[4];
};

// Rng::Philox: 10 rounds on counter c with key (k0, k1).
SLUICE_HD Words4 Philox(Words4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxWeyl0;
      k1 += kPhiloxWeyl1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxMul0) * c.w[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxMul1) * c.w[2];
    c = Words4{{static_cast<uint32_t>(p1 >> 32) ^ c.w[1] ^ k0, static_cast<uint32_t>(p1),
                static_cast<uint32_t>(p0 >> 32) ^ c.w[3] ^ k1, static_cast<uint32_t>(p0)}};
  }
  return c;
}

}  // namespace

int RunFill(const FillArgs& a, KernelTarget target) {
  void* x = a.x;
  const float value = a.value;
  const bool xb = a.x_bf16;
  return ForEach(a.count, target,
                 [=] __host__ __device__(int64_t i) { StoreFloat(x, xb, i, value); });
}

int RunScaledCast(const ScaledCastArgs& a, KernelTarget target) {
  return VisitElemType(a.type, [&](auto t) { return ScaledCast<decltype(t)>(a, target); });
}

int RunAxpby(const AxpbyArgs& a, KernelTarget target) {
  const void* x = a.x;
  void* y = a.y;
  const bool xb = a.x_bf16, yb = a.y_bf16;
  const float alpha = a.alpha, beta = a.beta;
  if (beta == 0.0f) {
    return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
      StoreFloat(y, yb, i, Mul(alpha, LoadFloat(x, xb, i)));
    });
  }
  return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
    StoreFloat(y, yb, i, Add(Mul(alpha, LoadFloat(x, xb, i)), Mul(beta, LoadFloat(y, yb, i))));
  });
}

int RunMultiply(const MultiplyArgs& a, KernelTarget target) {
  const void* pa = a.a;
  const void* pb = a.b;
  void* y = a.y;
  const bool ab = a.a_bf16, bb = a.b_bf16, yb = a.y_bf16;
  return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
    StoreFloat(y, yb, i, Mul(LoadFloat(pa, ab, i), LoadFloat(pb, bb, i)));
  });
}

int RunDropoutMask(const DropoutMaskArgs& a, KernelTarget target) {
  void* mask = a.mask;
  const bool mb = a.mask_bf16;
  const int64_t count = a.count;
  const float rate = a.rate, keep = a.keep;
  const uint64_t key = Mix64(a.seed);
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const uint64_t fixed_stream = a.stream;
  const int64_t* counter = a.stream_counter;
  // One Philox block (4 elements) per index.
  return ForEach((count + 3) / 4, target, [=] __host__ __device__(int64_t block) {
    const uint64_t stream = counter != nullptr ? static_cast<uint64_t>(*counter) : fixed_stream;
    const uint32_t s0 = static_cast<uint32_t>(stream), s1 = static_cast<uint32_t>(stream >> 32);
    const uint64_t b = static_cast<uint64_t>(block);
    const Words4 r =
        Philox(Words4{{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), s0, s1}}, k0, k1);
    const int64_t first = block * 4;
    for (int w = 0; w < 4 && first + w < count; ++w) {
      // UniformFloat: 24 random bits, exact in float.
      const float u = static_cast<float>(r.w[w] >> 8) * 0x1.0p-24f;
      StoreFloat(mask, mb, first + w, u >= rate ? keep : 0.0f);
    }
  });
}

}  // namespace sluice::gpu_backend_internal
