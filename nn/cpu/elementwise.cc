// Fill, Cast, Axpby, Multiply and DropoutMask: single passes over memory,
// written so g++ vectorizes the inner loops.
#include <algorithm>
#include <type_traits>

#include "sluice/core/rng.h"
#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/parallel.h"
#include "sluice/nn/kit/backend_checks.h"
#include "sluice/nn/kit/dense_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::nn::cpu {

Status CpuBackend::Fill(float value, DeviceTensor* x) {
  // float32 or bfloat16 (staged); then all float32 below (as every method here).
  SLUICE_RETURN_IF_ERROR(kit::CheckFill(device_, x, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({x})) return kit::in_float32::Fill(*this, value, x);
  float* p = x->data<float>();
  ParallelFor(x->num_elements(), UseThreads(), 1,
              [&](int, int64_t begin, int64_t end) { std::fill(p + begin, p + end, value); });
  return Status::OK();
}

Status CpuBackend::Cast(const DeviceTensor& x, float scale, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(kit::CheckCast(device_, x, y));
  const int threads = UseThreads();
  // y = float(x) * scale, then rounded to y's dtype (float32 or bfloat16).
  auto cast = [&](auto* out) {
    using Out = std::remove_pointer_t<decltype(out)>;
    VisitDType(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, std::string_view>) {
        const T* in = x.data<T>();
        ParallelFor(x.num_elements(), threads, 1, [&](int, int64_t begin, int64_t end) {
#pragma omp simd
          for (int64_t i = begin; i < end; ++i) out[i] = Out(static_cast<float>(in[i]) * scale);
        });
      }
    });
  };
  if (y->dtype() == DType::kBFloat16) {
    cast(y->data<bfloat16>());
  } else {
    cast(y->data<float>());
  }
  return Status::OK();
}

Status CpuBackend::Axpby(float alpha, const DeviceTensor& x, float beta, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(kit::CheckAxpby(device_, x, y, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&x, y})) return kit::in_float32::Axpby(*this, alpha, x, beta, y);
  const float* in = x.data<float>();
  float* out = y->data<float>();
  ParallelFor(x.num_elements(), UseThreads(), 1, [&](int, int64_t begin, int64_t end) {
    // beta == 0 must not read y: it may hold NaN from Allocate().
    if (beta == 0.0f) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) out[i] = alpha * in[i];
    } else {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) out[i] = alpha * in[i] + beta * out[i];
    }
  });
  return Status::OK();
}

Status CpuBackend::Multiply(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor* y) {
  SLUICE_RETURN_IF_ERROR(kit::CheckMultiply(device_, a, b, y, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&a, &b, y})) return kit::in_float32::Multiply(*this, a, b, y);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* out = y->data<float>();
  ParallelFor(a.num_elements(), UseThreads(), 1, [&](int, int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) out[i] = pa[i] * pb[i];
  });
  return Status::OK();
}

Status CpuBackend::DropoutMaskFromCounter(float rate, uint64_t seed,
                                          const DeviceTensor& stream_counter, DeviceTensor* mask) {
  SLUICE_RETURN_IF_ERROR(kit::CheckCounter("DropoutMask", device_, &stream_counter));
  return DropoutMask(rate, seed, static_cast<uint64_t>(stream_counter.data<int64_t>()[0]), mask);
}

Status CpuBackend::DropoutMask(float rate, uint64_t seed, uint64_t stream, DeviceTensor* mask) {
  SLUICE_RETURN_IF_ERROR(
      kit::CheckDropoutMask(device_, rate, mask, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({mask})) {
    return kit::in_float32::DropoutMask(*this, rate, seed, stream, nullptr, mask);
  }
  // Element i keeps its value iff the i-th UniformFloat() of
  // Rng(seed, stream) is >= rate. Drawn sequentially: the mask is then the
  // same for every thread count, and Philox costs ~1 ns per element, small
  // beside the layer's own work.
  const float keep = 1.0f / (1.0f - rate);
  Rng rng(seed, stream);
  float* out = mask->data<float>();
  const int64_t n = mask->num_elements();
  for (int64_t i = 0; i < n; ++i) out[i] = rng.UniformFloat() >= rate ? keep : 0.0f;
  return Status::OK();
}

}  // namespace sluice::nn::cpu
