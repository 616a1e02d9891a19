// SgdUpdate and AdamUpdate: Keras's update formulas, one fused pass.
#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/parallel.h"
#include "sluice/nn/kit/backend_checks.h"
#include "sluice/nn/kit/train_checks.h"

namespace sluice::nn::cpu {

namespace {

// Adam's update of elements [begin, end). The compiler will not vectorize
// std::sqrt (its errno branch, though v >= 0 never takes it), so the bulk
// runs four lanes at a time with SSE2, which every x86-64 has.
void AdamChunk(const float* g, float* w, float* m, float* v, int64_t begin, int64_t end,
               float one_minus_b1, float one_minus_b2, float lr_t, float eps) {
  int64_t i = begin;
#if defined(__SSE2__)
  const __m128 b1 = _mm_set1_ps(one_minus_b1), b2 = _mm_set1_ps(one_minus_b2);
  const __m128 lr = _mm_set1_ps(lr_t), ep = _mm_set1_ps(eps);
  for (; i + 4 <= end; i += 4) {
    const __m128 gi = _mm_loadu_ps(g + i);
    __m128 mi = _mm_loadu_ps(m + i), vi = _mm_loadu_ps(v + i);
    mi = _mm_add_ps(mi, _mm_mul_ps(_mm_sub_ps(gi, mi), b1));
    vi = _mm_add_ps(vi, _mm_mul_ps(_mm_sub_ps(_mm_mul_ps(gi, gi), vi), b2));
    const __m128 step = _mm_div_ps(_mm_mul_ps(lr, mi), _mm_add_ps(_mm_sqrt_ps(vi), ep));
    _mm_storeu_ps(m + i, mi);
    _mm_storeu_ps(v + i, vi);
    _mm_storeu_ps(w + i, _mm_sub_ps(_mm_loadu_ps(w + i), step));
  }
#endif
  for (; i < end; ++i) {
    m[i] += (g[i] - m[i]) * one_minus_b1;
    v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
  }
}

}  // namespace

Status CpuBackend::SgdUpdate(const DeviceTensor& grad, float learning_rate, float momentum,
                             bool nesterov, DeviceTensor* var, DeviceTensor* velocity) {
  SLUICE_RETURN_IF_ERROR(kit::CheckSgdUpdate(device_, grad, momentum, var, velocity));
  const float* g = grad.data<float>();
  float* w = var->data<float>();
  const float lr = learning_rate;
  if (momentum == 0.0f && velocity == nullptr) {
    ParallelFor(grad.num_elements(), UseThreads(), 1, [&](int, int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) w[i] -= lr * g[i];
    });
    return Status::OK();
  }
  float* v = velocity->data<float>();
  ParallelFor(grad.num_elements(), UseThreads(), 1, [&](int, int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      v[i] = momentum * v[i] - lr * g[i];
      w[i] += nesterov ? momentum * v[i] - lr * g[i] : v[i];
    }
  });
  return Status::OK();
}

Status CpuBackend::AdamUpdate(const DeviceTensor& grad, const AdamStep& step, DeviceTensor* var,
                              DeviceTensor* m, DeviceTensor* v) {
  SLUICE_RETURN_IF_ERROR(kit::CheckAdamUpdate(device_, grad, step, var, m, v));
  AdamStep at = step;
  if (step.step_counter != nullptr) {
    at.step = step.step_counter->data<int64_t>()[0];
    if (at.step < 1) {
      return Status::InvalidArgument("AdamUpdate: the step counter holds " +
                                     std::to_string(at.step) + "; steps count from 1");
    }
  }
  const float lr_t = kit::AdamCorrectedRate(at);
  const float one_minus_b1 = 1.0f - step.beta_1, one_minus_b2 = 1.0f - step.beta_2;
  const float eps = step.epsilon;
  const float* g = grad.data<float>();
  float* w = var->data<float>();
  float* pm = m->data<float>();
  float* pv = v->data<float>();
  ParallelFor(grad.num_elements(), UseThreads(), 1, [&](int, int64_t begin, int64_t end) {
    AdamChunk(g, w, pm, pv, begin, end, one_minus_b1, one_minus_b2, lr_t, eps);
  });
  return Status::OK();
}

Status CpuBackend::AddToCounter(int64_t delta, DeviceTensor* counter) {
  SLUICE_RETURN_IF_ERROR(kit::CheckCounter("AddToCounter", device_, counter));
  counter->data<int64_t>()[0] += delta;
  return Status::OK();
}

}  // namespace sluice::nn::cpu
