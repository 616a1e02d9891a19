// Activation and optimizer-update element loops (train_kernels.h): one
// thread per element, or per row for softmax, run on a GPU or on the host.
// Each step is one rounded float operation in nn/cpu/'s order.
#include <cmath>

#include "sluice/gpu/backend/internal/backend_kernel_util.cuh"
#include "sluice/gpu/backend/internal/train_kernels.h"

namespace sluice::gpu::backend::internal {
namespace {

// Correctly rounded square root on both sides.
SLUICE_HD float Sqrt(float x) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(x);
#else
  return sqrtf(x);
#endif
}

// 1 / (1 + e^-x) without overflow for large |x| (nn/cpu/activations.cc).
SLUICE_HD float Sigmoid(float x) {
  if (x >= 0.0f) return Div(1.0f, Add(1.0f, expf(-x)));
  const float e = expf(x);
  return Div(e, Add(1.0f, e));
}

// exp(x_j - max) is computed twice, for the sum and for y_j, so a bfloat16
// y never holds a partial result (the same float values either time).
int SoftmaxForward(const ActivationForwardArgs& a, KernelTarget target) {
  const void* x = a.x;
  void* y = a.y;
  const bool xb = a.x_bf16, yb = a.y_bf16;
  const int64_t c = a.row;
  return ForEach(a.count / c, target, [=] __host__ __device__(int64_t r) {
    const FloatView xr{x, xb, r * c};  // y may be x: each y_j is written after its last read
    float max = xr[0];
    for (int64_t j = 1; j < c; ++j) max = max < xr[j] ? xr[j] : max;  // std::max
    float sum = 0.0f;
    for (int64_t j = 0; j < c; ++j) sum = Add(sum, expf(Sub(xr[j], max)));
    const float inv = Div(1.0f, sum);
    for (int64_t j = 0; j < c; ++j) StoreFloat(y, yb, r * c + j, Mul(expf(Sub(xr[j], max)), inv));
  });
}

int SoftmaxBackward(const ActivationBackwardArgs& a, KernelTarget target) {
  const void* y = a.y;
  const void* dy = a.dy;
  void* dx = a.dx;
  const bool yb = a.y_bf16, dyb = a.dy_bf16, dxb = a.dx_bf16;
  const int64_t c = a.row;
  return ForEach(a.count / c, target, [=] __host__ __device__(int64_t r) {
    const FloatView yr{y, yb, r * c}, dyr{dy, dyb, r * c};
    float dot = 0.0f;
    for (int64_t j = 0; j < c; ++j) dot = Add(dot, Mul(dyr[j], yr[j]));
    // dx may be dy: each j reads dy_j before writing dx_j.
    for (int64_t j = 0; j < c; ++j) StoreFloat(dx, dxb, r * c + j, Mul(yr[j], Sub(dyr[j], dot)));
  });
}

}  // namespace

int RunActivationForward(const ActivationForwardArgs& a, KernelTarget target) {
  if (a.f == ActivationKind::kSoftmax) return SoftmaxForward(a, target);
  const void* x = a.x;
  void* y = a.y;
  const bool xb = a.x_bf16, yb = a.y_bf16;
  switch (a.f) {
    case ActivationKind::kLinear:
      if (x == y && xb == yb) return 0;
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        StoreFloat(y, yb, i, LoadFloat(x, xb, i));
      });
    case ActivationKind::kRelu:
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        const float v = LoadFloat(x, xb, i);
        StoreFloat(y, yb, i, v > 0.0f ? v : 0.0f);
      });
    case ActivationKind::kSigmoid:
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        StoreFloat(y, yb, i, Sigmoid(LoadFloat(x, xb, i)));
      });
    case ActivationKind::kTanh:
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        StoreFloat(y, yb, i, tanhf(LoadFloat(x, xb, i)));
      });
    case ActivationKind::kSoftmax: break;
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int RunActivationBackward(const ActivationBackwardArgs& a, KernelTarget target) {
  if (a.f == ActivationKind::kSoftmax) return SoftmaxBackward(a, target);
  const void* y = a.y;
  const void* dy = a.dy;
  void* dx = a.dx;
  const bool yb = a.y_bf16, dyb = a.dy_bf16, dxb = a.dx_bf16;
  switch (a.f) {
    case ActivationKind::kLinear:
      if (dy == dx && dyb == dxb) return 0;
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        StoreFloat(dx, dxb, i, LoadFloat(dy, dyb, i));
      });
    case ActivationKind::kRelu:
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        StoreFloat(dx, dxb, i, LoadFloat(y, yb, i) > 0.0f ? LoadFloat(dy, dyb, i) : 0.0f);
      });
    case ActivationKind::kSigmoid:  // dy · y · (1 - y)
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        const float yi = LoadFloat(y, yb, i);
        StoreFloat(dx, dxb, i, Mul(Mul(LoadFloat(dy, dyb, i), yi), Sub(1.0f, yi)));
      });
    case ActivationKind::kTanh:  // dy · (1 - y²)
      return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
        const float yi = LoadFloat(y, yb, i);
        StoreFloat(dx, dxb, i, Mul(LoadFloat(dy, dyb, i), Sub(1.0f, Mul(yi, yi))));
      });
    case ActivationKind::kSoftmax: break;
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int RunSgdUpdate(const SgdUpdateArgs& a, KernelTarget target) {
  const float* g = a.grad;
  float* w = a.var;
  float* v = a.velocity;
  const float lr = a.learning_rate, momentum = a.momentum;
  const bool nesterov = a.nesterov;
  if (v == nullptr) {
    return ForEach(a.count, target,
                   [=] __host__ __device__(int64_t i) { w[i] = Sub(w[i], Mul(lr, g[i])); });
  }
  return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
    const float vi = Sub(Mul(momentum, v[i]), Mul(lr, g[i]));
    v[i] = vi;
    w[i] = Add(w[i], nesterov ? Sub(Mul(momentum, vi), Mul(lr, g[i])) : vi);
  });
}

int RunAdamUpdate(const AdamUpdateArgs& a, KernelTarget target) {
  const float* g = a.grad;
  float* w = a.var;
  float* m = a.m;
  float* v = a.v;
  const float lr_host = a.lr_t, b1 = a.one_minus_b1, b2 = a.one_minus_b2, eps = a.epsilon;
  const float* lr_dev = a.lr_t_on_device;
  return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
    const float lr_t = lr_dev != nullptr ? *lr_dev : lr_host;
    const float gi = g[i];
    const float mi = Add(m[i], Mul(Sub(gi, m[i]), b1));
    const float vi = Add(v[i], Mul(Sub(Mul(gi, gi), v[i]), b2));
    m[i] = mi;
    v[i] = vi;
    w[i] = Sub(w[i], Div(Mul(lr_t, mi), Add(Sqrt(vi), eps)));
  });
}

int RunAdamRate(const AdamRateArgs& a, KernelTarget target) {
  const AdamRateArgs args = a;
  return ForEach(1, target, [=] __host__ __device__(int64_t) {
    const double t = static_cast<double>(*args.step < 1 ? 1 : *args.step);
    *args.lr_t =
        static_cast<float>(args.learning_rate * std::sqrt(1.0 - std::pow(double{args.beta_2}, t)) /
                           (1.0 - std::pow(double{args.beta_1}, t)));
  });
}

int RunAddToCounter(const AddToCounterArgs& a, KernelTarget target) {
  const AddToCounterArgs args = a;
  return ForEach(1, target, [=] __host__ __device__(int64_t) { *args.counter += args.delta; });
}

}  // namespace sluice::gpu::backend::internal
