// Pooling loops (conv_kernels.h's RunPool2DForward / RunPool2DBackward),
// run on a GPU or on the host. Each thread takes V neighbouring channels
// (V = 4 when the channel count and the pointers allow one vector access,
// else 1) with the element types fixed at compile time; the arithmetic is
// per element, the same for every V.
//
// Forward: one thread per (window, V channels); it reads the window's taps
// once and writes y and argmax. Memory: x once, y and the int64 argmax
// once each.
// Backward, windows that do not overlap (kernel <= stride, as 2x2 stride 2
// max pooling): one thread per window, which reads dy and argmax once and
// writes every dx element of its cell (its taps and the uncovered positions
// up to the next window, zero). Memory: dy and argmax once, dx once.
// Backward, overlapping windows: one thread per dx element gathers from
// the windows that contain it (dy and argmax read by each of them).
#include <cstdint>

#include "sluice/nn/cuda/internal/conv_kernels.h"
#include "sluice/nn/cuda/internal/vector_access.cuh"
#include "sluice/nn/cuda/internal/window_index.cuh"

namespace sluice::gpu_backend_internal {
namespace {

template <typename X, typename Y, int V>
int PoolForward(const Pool2DForwardArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const bool is_max = a.kind == PoolKind::kMax;
  const X* x = static_cast<const X*>(a.x);
  Y* y = static_cast<Y*>(a.y);
  int64_t* argmax = a.argmax;
  const int64_t groups = g.in_c / V;
  return ForEach(g.batch * g.out_h * g.out_w * groups, target, [=] __host__ __device__(int64_t i) {
    const Nhwc o = Unflatten(i, g.out_h, g.out_w, groups);
    const Span h = WindowTaps(o.h, g.pad_top, g.kernel_h, g.stride_h, g.in_h);
    const Span w = WindowTaps(o.w, g.pad_left, g.kernel_w, g.stride_w, g.in_w);
    // Every window holds at least one input element (window.h's padding).
    const int64_t first = ((o.b * g.in_h + h.lo) * g.in_w + w.lo) * g.in_c + o.c * V;
    const Vec<X, V> x0 = LoadVec<X, V>(x + first);
    float acc[V];
    int64_t best[V];
    for (int k = 0; k < V; ++k) {
      acc[k] = is_max ? AsFloat(x0.v[k]) : 0.0f;
      best[k] = first + k;
    }
    for (int64_t ih = h.lo; ih < h.hi; ++ih) {
      for (int64_t iw = w.lo; iw < w.hi; ++iw) {
        const int64_t at = ((o.b * g.in_h + ih) * g.in_w + iw) * g.in_c + o.c * V;
        const Vec<X, V> xv = LoadVec<X, V>(x + at);
        for (int k = 0; k < V; ++k) {
          const float v = AsFloat(xv.v[k]);
          if (!is_max) {
            acc[k] = Add(acc[k], v);
          } else if (v > acc[k]) {  // the first maximum; NaN never replaces it
            acc[k] = v;
            best[k] = at + k;
          }
        }
      }
    }
    const float taps = static_cast<float>((h.hi - h.lo) * (w.hi - w.lo));
    Vec<Y, V> out;
    for (int k = 0; k < V; ++k) out.v[k] = FromFloat<Y>(is_max ? acc[k] : Div(acc[k], taps));
    StoreVec<Y, V>(y + i * V, out);
    if (argmax != nullptr) {
      Vec<int64_t, V> bv;
      for (int k = 0; k < V; ++k) bv.v[k] = best[k];
      StoreVec<int64_t, V>(argmax + i * V, bv);
    }
  });
}

// kernel <= stride on both axes: each dx element is in at most one window,
// so dx is 0 + dy[o] (max: at argmax[o] only; average: dy[o] / taps at
// every tap) or 0, the gather's sum of one term or none.
template <typename D, typename DX, int V>
int PoolBackwardByWindow(const Pool2DBackwardArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const bool is_max = a.kind == PoolKind::kMax;
  const D* dy = static_cast<const D*>(a.dy);
  const int64_t* argmax = a.argmax;
  DX* dx = static_cast<DX*>(a.dx);
  const int64_t groups = g.in_c / V;
  return ForEach(g.batch * g.out_h * g.out_w * groups, target, [=] __host__ __device__(int64_t i) {
    const Nhwc o = Unflatten(i, g.out_h, g.out_w, groups);
    const Span th = WindowTaps(o.h, g.pad_top, g.kernel_h, g.stride_h, g.in_h);
    const Span tw = WindowTaps(o.w, g.pad_left, g.kernel_w, g.stride_w, g.in_w);
    const Span ch = WindowCell(o.h, g.pad_top, g.stride_h, g.out_h, g.in_h);
    const Span cw = WindowCell(o.w, g.pad_left, g.stride_w, g.out_w, g.in_w);
    const Vec<D, V> dv = LoadVec<D, V>(dy + i * V);
    float grad[V];
    int64_t best[V];
    if (is_max) {
      const Vec<int64_t, V> am = LoadVec<int64_t, V>(argmax + i * V);
      for (int k = 0; k < V; ++k) {
        grad[k] = Add(0.0f, AsFloat(dv.v[k]));
        best[k] = am.v[k];
      }
    } else {
      const float taps = static_cast<float>((th.hi - th.lo) * (tw.hi - tw.lo));
      for (int k = 0; k < V; ++k) {
        grad[k] = Add(0.0f, Div(AsFloat(dv.v[k]), taps));
        best[k] = -1;  // unused
      }
    }
    for (int64_t ih = ch.lo; ih < ch.hi; ++ih) {
      for (int64_t iw = cw.lo; iw < cw.hi; ++iw) {
        const int64_t at = ((o.b * g.in_h + ih) * g.in_w + iw) * g.in_c + o.c * V;
        const bool tap = ih >= th.lo && ih < th.hi && iw >= tw.lo && iw < tw.hi;
        Vec<DX, V> out;
        for (int k = 0; k < V; ++k) {
          out.v[k] = FromFloat<DX>((is_max ? best[k] == at + k : tap) ? grad[k] : 0.0f);
        }
        StoreVec<DX, V>(dx + at, out);
      }
    }
  });
}

// Overlapping windows: dx gathered from the windows containing it (oh,
// then ow, ascending).
template <typename D, typename DX, int V>
int PoolBackwardGather(const Pool2DBackwardArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const bool is_max = a.kind == PoolKind::kMax;
  const D* dy = static_cast<const D*>(a.dy);
  const int64_t* argmax = a.argmax;
  DX* dx = static_cast<DX*>(a.dx);
  const int64_t groups = g.in_c / V;
  return ForEach(g.batch * g.in_h * g.in_w * groups, target, [=] __host__ __device__(int64_t i) {
    const Nhwc x = Unflatten(i, g.in_h, g.in_w, groups);
    const int64_t self = i * V;  // the flat index of channel x.c · V
    const Span h = WindowsContaining(x.h, g.pad_top, g.kernel_h, g.stride_h, g.out_h);
    const Span w = WindowsContaining(x.w, g.pad_left, g.kernel_w, g.stride_w, g.out_w);
    float acc[V];
    for (int k = 0; k < V; ++k) acc[k] = 0.0f;
    for (int64_t oh = h.lo; oh < h.hi; ++oh) {
      for (int64_t ow = w.lo; ow < w.hi; ++ow) {
        const int64_t o = ((x.b * g.out_h + oh) * g.out_w + ow) * g.in_c + x.c * V;
        const Vec<D, V> dv = LoadVec<D, V>(dy + o);
        if (is_max) {
          const Vec<int64_t, V> am = LoadVec<int64_t, V>(argmax + o);
          for (int k = 0; k < V; ++k) {
            if (am.v[k] == self + k) acc[k] = Add(acc[k], AsFloat(dv.v[k]));
          }
        } else {
          const float taps = TapCount(g, oh, ow);
          for (int k = 0; k < V; ++k) acc[k] = Add(acc[k], Div(AsFloat(dv.v[k]), taps));
        }
      }
    }
    Vec<DX, V> out;
    for (int k = 0; k < V; ++k) out.v[k] = FromFloat<DX>(acc[k]);
    StoreVec<DX, V>(dx + self, out);
  });
}

constexpr int kPoolVec = 4;

}  // namespace

int RunPool2DForward(const Pool2DForwardArgs& a, KernelTarget target) {
  return VisitFloatType(a.x_bf16, [&](auto xt) {
    return VisitFloatType(a.y_bf16, [&](auto yt) {
      using X = decltype(xt);
      using Y = decltype(yt);
      const bool vec = a.g.in_c % kPoolVec == 0 && VecAligned<X, kPoolVec>(a.x) &&
                       VecAligned<Y, kPoolVec>(a.y) &&
                       (a.argmax == nullptr || VecAligned<int64_t, kPoolVec>(a.argmax));
      return vec ? PoolForward<X, Y, kPoolVec>(a, target) : PoolForward<X, Y, 1>(a, target);
    });
  });
}

int RunPool2DBackward(const Pool2DBackwardArgs& a, KernelTarget target) {
  const bool by_window = a.g.kernel_h <= a.g.stride_h && a.g.kernel_w <= a.g.stride_w;
  return VisitFloatType(a.dy_bf16, [&](auto dt) {
    return VisitFloatType(a.dx_bf16, [&](auto xt) {
      using D = decltype(dt);
      using DX = decltype(xt);
      const bool vec = a.g.in_c % kPoolVec == 0 && VecAligned<D, kPoolVec>(a.dy) &&
                       VecAligned<DX, kPoolVec>(a.dx) &&
                       (a.argmax == nullptr || VecAligned<int64_t, kPoolVec>(a.argmax));
      if (by_window) {
        return vec ? PoolBackwardByWindow<D, DX, kPoolVec>(a, target)
                   : PoolBackwardByWindow<D, DX, 1>(a, target);
      }
      return vec ? PoolBackwardGather<D, DX, kPoolVec>(a, target)
                 : PoolBackwardGather<D, DX, 1>(a, target);
    });
  });
}

}  // namespace sluice::gpu_backend_internal
