// ActivationForward / ActivationBackward. Backward works from the forward
// output y (as the interface documents), so layers need not keep x.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/parallel.h"
#include "sluice/nn/kit/float32_staging.h"
#include "sluice/nn/kit/train_checks.h"

namespace sluice::nn::cpu {

namespace {

// 1 / (1 + e^-x) without overflow for large |x|.
inline float Sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

// Softmax of one row of `c` values; in place allowed.
void SoftmaxRow(const float* x, int64_t c, float* y) {
  float max = x[0];
  for (int64_t j = 1; j < c; ++j) max = std::max(max, x[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < c; ++j) {
    y[j] = std::exp(x[j] - max);
    sum += y[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < c; ++j) y[j] *= inv;
}

}  // namespace

Status CpuBackend::ActivationForward(Activation f, const DeviceTensor& x, DeviceTensor* y) {
  // float32 or bfloat16 (staged); then all float32 below.
  SLUICE_RETURN_IF_ERROR(
      kit::CheckActivationForward(device_, f, x, y, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&x, y})) return kit::in_float32::ActivationForward(*this, f, x, y);
  const float* in = x.data<float>();
  float* out = y->data<float>();
  const int64_t n = x.num_elements();
  const int threads = UseThreads();
  if (f == Activation::kSoftmax) {
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0) return Status::OK();
    ParallelFor(n / c, threads, c, [&](int, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) SoftmaxRow(in + r * c, c, out + r * c);
    });
    return Status::OK();
  }
  ParallelFor(n, threads, 1, [&](int, int64_t begin, int64_t end) {
    switch (f) {
      case Activation::kLinear:
        if (in != out) std::memcpy(out + begin, in + begin, (end - begin) * sizeof(float));
        break;
      case Activation::kRelu:
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
        break;
      case Activation::kSigmoid:
        for (int64_t i = begin; i < end; ++i) out[i] = Sigmoid(in[i]);
        break;
      case Activation::kTanh:
        for (int64_t i = begin; i < end; ++i) out[i] = std::tanh(in[i]);
        break;
      case Activation::kSoftmax: break;
    }
  });
  return Status::OK();
}

Status CpuBackend::ActivationBackward(Activation f, const DeviceTensor& y, const DeviceTensor& dy,
                                      DeviceTensor* dx) {
  SLUICE_RETURN_IF_ERROR(
      kit::CheckActivationBackward(device_, f, y, dy, dx, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&y, &dy, dx})) {
    return kit::in_float32::ActivationBackward(*this, f, y, dy, dx);
  }
  const float* py = y.data<float>();
  const float* pdy = dy.data<float>();
  float* out = dx->data<float>();
  const int64_t n = y.num_elements();
  const int threads = UseThreads();
  if (f == Activation::kSoftmax) {
    const int64_t c = y.dim(y.rank() - 1);
    if (c == 0) return Status::OK();
    ParallelFor(n / c, threads, c, [&](int, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* yr = py + r * c;
        const float* dyr = pdy + r * c;
        float dot = 0.0f;
        for (int64_t j = 0; j < c; ++j) dot += dyr[j] * yr[j];
        float* dxr = out + r * c;  // may be dyr: each j reads dyr[j] before writing
        for (int64_t j = 0; j < c; ++j) dxr[j] = yr[j] * (dyr[j] - dot);
      }
    });
    return Status::OK();
  }
  ParallelFor(n, threads, 1, [&](int, int64_t begin, int64_t end) {
    switch (f) {
      case Activation::kLinear:
        if (pdy != out) std::memcpy(out + begin, pdy + begin, (end - begin) * sizeof(float));
        break;
      case Activation::kRelu:
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) out[i] = py[i] > 0.0f ? pdy[i] : 0.0f;
        break;
      case Activation::kSigmoid:
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) out[i] = pdy[i] * py[i] * (1.0f - py[i]);
        break;
      case Activation::kTanh:
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) out[i] = pdy[i] * (1.0f - py[i] * py[i]);
        break;
      case Activation::kSoftmax: break;
    }
  });
  return Status::OK();
}

}  // namespace sluice::nn::cpu
