// Activation and optimizer-update element loops (train_kernels.h): one
// thread per element, or per row for softmax, run on a GPU or on the host.
// Each step is one rounded float operation in nn/cpu/'s order. Linear and
// relu (forward and backward), bandwidth-bound, take runs of kActVec
// elements per thread (one vector access each, element types fixed at
// compile time) where the pointers are aligned for it: memory is each input
// read once and the output written once.
#include <cmath>

#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"
#include "sluice/nn/cuda/internal/train_kernels.h"
#include "sluice/nn/cuda/internal/vector_access.cuh"

namespace sluice::gpu_backend_internal {
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

constexpr int kActVec = 8;

struct Identity {
  SLUICE_HD float operator()(float v) const { return v; }
};
struct Relu {
  SLUICE_HD float operator()(float v) const { return v > 0.0f ? v : 0.0f; }
};
struct ReluGrad {  // from the forward output y
  SLUICE_HD float operator()(float y, float dy) const { return y > 0.0f ? dy : 0.0f; }
};

// y[i] = op(x[i]) for i < n, V elements per thread (the last run may be
// shorter). y may be x: a thread reads its run before writing it.
template <int V, typename X, typename Y, typename Op>
int MapRuns(const X* x, Y* y, int64_t n, KernelTarget target, Op op) {
  return ForEach((n + V - 1) / V, target, [=] __host__ __device__(int64_t i) {
    const int64_t base = i * V;
    if (base + V <= n) {
      const Vec<X, V> xv = LoadVec<X, V>(x + base);
      Vec<Y, V> yv;
      for (int k = 0; k < V; ++k) yv.v[k] = FromFloat<Y>(op(AsFloat(xv.v[k])));
      StoreVec<Y, V>(y + base, yv);
    } else {
      for (int64_t j = base; j < n; ++j) y[j] = FromFloat<Y>(op(AsFloat(x[j])));
    }
  });
}

// out[i] = op(a[i], b[i]), as MapRuns.
template <int V, typename A, typename B, typename Out, typename Op>
int MapRuns2(const A* a, const B* b, Out* out, int64_t n, KernelTarget target, Op op) {
  return ForEach((n + V - 1) / V, target, [=] __host__ __device__(int64_t i) {
    const int64_t base = i * V;
    if (base + V <= n) {
      const Vec<A, V> av = LoadVec<A, V>(a + base);
      const Vec<B, V> bv = LoadVec<B, V>(b + base);
      Vec<Out, V> ov;
      for (int k = 0; k < V; ++k) ov.v[k] = FromFloat<Out>(op(AsFloat(av.v[k]), AsFloat(bv.v[k])));
      StoreVec<Out, V>(out + base, ov);
    } else {
      for (int64_t j = base; j < n; ++j) out[j] = FromFloat<Out>(op(AsFloat(a[j]), AsFloat(b[j])));
    }
  });
}

// MapRuns over float32 or bfloat16 tensors: runs of kActVec when both
// pointers allow, else single elements.
template <typename Op>
int MapFloats(const void* x, bool xb, void* y, bool yb, int64_t n, KernelTarget target, Op op) {
  return VisitFloatType(xb, [&](auto xt) {
    return VisitFloatType(yb, [&](auto yt) {
      using X = decltype(xt);
      using Y = decltype(yt);
      const X* xp = static_cast<const X*>(x);
      Y* yp = static_cast<Y*>(y);
      return VecAligned<X, kActVec>(x) && VecAligned<Y, kActVec>(y)
                 ? MapRuns<kActVec>(xp, yp, n, target, op)
                 : MapRuns<1>(xp, yp, n, target, op);
    });
  });
}

template <typename Op>
int MapFloats2(const void* a, bool ab, const void* b, bool bb, void* out, bool ob, int64_t n,
               KernelTarget target, Op op) {
  return VisitFloatType(ab, [&](auto at) {
    return VisitFloatType(bb, [&](auto bt) {
      return VisitFloatType(ob, [&](auto ot) {
        using A = decltype(at);
        using B = decltype(bt);
        using O = decltype(ot);
        const A* ap = static_cast<const A*>(a);
        const B* bp = static_cast<const B*>(b);
        O* op_ = static_cast<O*>(out);
        return VecAligned<A, kActVec>(a) && VecAligned<B, kActVec>(b) && VecAligned<O, kActVec>(out)
                   ? MapRuns2<kActVec>(ap, bp, op_, n, target, op)
                   : MapRuns2<1>(ap, bp, op_, n, target, op);
      });
    });
  });
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
      return MapFloats(x, xb, y, yb, a.count, target, Identity{});
    case ActivationKind::kRelu: return MapFloats(x, xb, y, yb, a.count, target, Relu{});
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
      return MapFloats(dy, dyb, dx, dxb, a.count, target, Identity{});
    case ActivationKind::kRelu:
      return MapFloats2(y, yb, dy, dyb, dx, dxb, a.count, target, ReluGrad{});
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

}  // namespace sluice::gpu_backend_internal
