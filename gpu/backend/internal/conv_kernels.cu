// Convolution and pooling element loops (conv_kernels.h): one thread per
// output element, run on a GPU or on the host.
#include <type_traits>

#include "sluice/gpu/backend/internal/backend_kernel_util.cuh"
#include "sluice/gpu/backend/internal/conv_kernels.h"

namespace sluice::gpu::backend::internal {
namespace {

// An element of a [batch, rows, cols, channels] tensor by its flat index.
struct Nhwc {
  int64_t b, h, w, c;
};
SLUICE_HD Nhwc Unflatten(int64_t i, int64_t rows, int64_t cols, int64_t channels) {
  const int64_t p = i / channels;
  const int64_t q = p / cols;
  return Nhwc{q / rows, q % rows, p % cols, i % channels};
}

// The outputs along one dimension whose window contains input position
// `in`: [lo, hi), within [0, out). A window starts at o · stride - pad.
struct Span {
  int64_t lo, hi;
};
SLUICE_HD Span WindowsContaining(int64_t in, int64_t pad, int64_t kernel, int64_t stride,
                                 int64_t out) {
  const int64_t first = in + pad - kernel + 1;  // o · stride >= first
  const int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int64_t hi = (in + pad) / stride + 1;  // o · stride <= in + pad
  return Span{lo, hi < out ? hi : out};
}

// The input positions of window o along one dimension: [lo, hi), clipped.
SLUICE_HD Span WindowTaps(int64_t o, int64_t pad, int64_t kernel, int64_t stride, int64_t in) {
  const int64_t start = o * stride - pad;
  const int64_t end = start + kernel;
  return Span{start < 0 ? 0 : start, end < in ? end : in};
}

// Taps of window (oh, ow) inside the input, as the average's divisor.
SLUICE_HD float TapCount(const WindowGeometry& g, int64_t oh, int64_t ow) {
  const Span h = WindowTaps(oh, g.pad_top, g.kernel_h, g.stride_h, g.in_h);
  const Span w = WindowTaps(ow, g.pad_left, g.kernel_w, g.stride_w, g.in_w);
  return static_cast<float>((h.hi - h.lo) * (w.hi - w.lo));
}

}  // namespace

int RunConv2DForward(const Conv2DForwardArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const float* x = a.x;
  const float* filter = a.filter;
  const float* bias = a.bias;
  float* y = a.y;
  return ForEach(g.batch * g.out_h * g.out_w * g.out_c, target, [=] __host__ __device__(int64_t i) {
    const Nhwc o = Unflatten(i, g.out_h, g.out_w, g.out_c);
    float acc = 0.0f;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t ih = o.h * g.stride_h - g.pad_top + kh;
      if (ih < 0 || ih >= g.in_h) continue;
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t iw = o.w * g.stride_w - g.pad_left + kw;
        if (iw < 0 || iw >= g.in_w) continue;
        const float* xp = x + ((o.b * g.in_h + ih) * g.in_w + iw) * g.in_c;
        const float* fp = filter + (kh * g.kernel_w + kw) * g.in_c * g.out_c + o.c;
        for (int64_t c = 0; c < g.in_c; ++c) acc = Add(acc, Mul(xp[c], fp[c * g.out_c]));
      }
    }
    y[i] = bias != nullptr ? Add(acc, bias[o.c]) : acc;
  });
}

int RunConv2DBackwardData(const Conv2DBackwardDataArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const float* dy = a.dy;
  const float* filter = a.filter;
  float* dx = a.dx;
  return ForEach(g.batch * g.in_h * g.in_w * g.in_c, target, [=] __host__ __device__(int64_t i) {
    const Nhwc x = Unflatten(i, g.in_h, g.in_w, g.in_c);
    float acc = 0.0f;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t th = x.h + g.pad_top - kh;  // oh · stride_h
      if (th < 0 || th % g.stride_h != 0 || th / g.stride_h >= g.out_h) continue;
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t tw = x.w + g.pad_left - kw;
        if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.out_w) continue;
        const float* dyp =
            dy + ((x.b * g.out_h + th / g.stride_h) * g.out_w + tw / g.stride_w) * g.out_c;
        const float* fp = filter + ((kh * g.kernel_w + kw) * g.in_c + x.c) * g.out_c;
        for (int64_t o = 0; o < g.out_c; ++o) acc = Add(acc, Mul(dyp[o], fp[o]));
      }
    }
    dx[i] = acc;
  });
}

int RunConv2DBackwardFilter(const Conv2DBackwardFilterArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const float* x = a.x;
  const float* dy = a.dy;
  float* dfilter = a.dfilter;
  // Filter element i = [kh, kw, c, o], as an NHWC index with batch kh.
  return ForEach(g.kernel_h * g.kernel_w * g.in_c * g.out_c, target,
                 [=] __host__ __device__(int64_t i) {
                   const Nhwc f = Unflatten(i, g.kernel_w, g.in_c, g.out_c);
                   const int64_t kh = f.b, kw = f.h, c = f.w, o = f.c;
                   float acc = 0.0f;
                   for (int64_t b = 0; b < g.batch; ++b) {
                     for (int64_t oh = 0; oh < g.out_h; ++oh) {
                       const int64_t ih = oh * g.stride_h - g.pad_top + kh;
                       if (ih < 0 || ih >= g.in_h) continue;
                       for (int64_t ow = 0; ow < g.out_w; ++ow) {
                         const int64_t iw = ow * g.stride_w - g.pad_left + kw;
                         if (iw < 0 || iw >= g.in_w) continue;
                         const float xv = x[((b * g.in_h + ih) * g.in_w + iw) * g.in_c + c];
                         const float dv = dy[((b * g.out_h + oh) * g.out_w + ow) * g.out_c + o];
                         acc = Add(acc, Mul(xv, dv));
                       }
                     }
                   }
                   dfilter[i] = acc;
                 });
}

namespace {

// v as Out (float, or bfloat16 rounded to nearest even).
template <typename Out>
SLUICE_HD Out StoreAs(float v) {
  if constexpr (std::is_same_v<Out, ::sluice::gpu::internal::BFloat>) {
    return ::sluice::gpu::internal::FloatToBFloat(v);
  } else {
    return v;
  }
}

template <typename In, typename Out>
int FilterTranspose(const FilterTransposeArgs& a, KernelTarget target) {
  const auto* in = static_cast<const In*>(a.in);
  auto* out = static_cast<Out*>(a.out);
  const int64_t taps = a.kernel_h * a.kernel_w;  // s = kh · kernel_w + kw
  const int64_t in_c = a.in_c, out_c = a.out_c;
  if (a.to_krsc) {  // out [o, s, c] from in [s, c, o]
    return ForEach(taps * in_c * out_c, target, [=] __host__ __device__(int64_t i) {
      const int64_t c = i % in_c;
      const int64_t r = i / in_c;
      out[i] = StoreAs<Out>(
          ::sluice::gpu::internal::ToFloat(in[((r % taps) * in_c + c) * out_c + r / taps]));
    });
  }
  return ForEach(taps * in_c * out_c, target, [=] __host__ __device__(int64_t i) {  // [s, c, o]
    const int64_t o = i % out_c;
    const int64_t r = i / out_c;  // s · in_c + c
    out[i] =
        StoreAs<Out>(::sluice::gpu::internal::ToFloat(in[(o * taps + r / in_c) * in_c + r % in_c]));
  });
}

}  // namespace

int RunFilterTranspose(const FilterTransposeArgs& a, KernelTarget target) {
  using ::sluice::gpu::internal::BFloat;
  if (a.in_bf16) {
    return a.out_bf16 ? FilterTranspose<BFloat, BFloat>(a, target)
                      : FilterTranspose<BFloat, float>(a, target);
  }
  return a.out_bf16 ? FilterTranspose<float, BFloat>(a, target)
                    : FilterTranspose<float, float>(a, target);
}

namespace {

// Pad (to_padded) or crop: one element of the destination per thread,
// where (h, w) of x is (h + pad_top, w + pad_left) of the padded image.
template <typename U>
int PadOrCrop(const PadNhwcArgs& a, bool to_padded, KernelTarget target) {
  const U* src = static_cast<const U*>(a.src);
  U* dst = static_cast<U*>(a.dst);
  const int64_t h = a.h, w = a.w, c = a.c, ph = a.padded_h, pw = a.padded_w;
  const int64_t top = a.pad_top, left = a.pad_left;
  const int64_t count = a.batch * (to_padded ? ph * pw : h * w) * c;
  return ForEach(count, target, [=] __host__ __device__(int64_t i) {
    if (!to_padded) {
      const Nhwc e = Unflatten(i, h, w, c);
      dst[i] = src[((e.b * ph + e.h + top) * pw + e.w + left) * c + e.c];
      return;
    }
    const Nhwc p = Unflatten(i, ph, pw, c);
    const int64_t ih = p.h - top, iw = p.w - left;
    const bool inside = ih >= 0 && ih < h && iw >= 0 && iw < w;
    dst[i] = inside ? src[((p.b * h + ih) * w + iw) * c + p.c] : U{0};
  });
}

int PadOrCrop(const PadNhwcArgs& a, bool to_padded, KernelTarget target) {
  switch (a.elem_size) {
    case 2: return PadOrCrop<uint16_t>(a, to_padded, target);
    case 4: return PadOrCrop<uint32_t>(a, to_padded, target);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace

int RunPadNhwc(const PadNhwcArgs& a, KernelTarget target) { return PadOrCrop(a, true, target); }

int RunCropNhwc(const PadNhwcArgs& a, KernelTarget target) { return PadOrCrop(a, false, target); }

int RunPool2DForward(const Pool2DForwardArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const bool is_max = a.kind == PoolKind::kMax;
  const void* x = a.x;
  void* y = a.y;
  const bool xb = a.x_bf16, yb = a.y_bf16;
  int64_t* argmax = a.argmax;
  return ForEach(g.batch * g.out_h * g.out_w * g.in_c, target, [=] __host__ __device__(int64_t i) {
    const Nhwc o = Unflatten(i, g.out_h, g.out_w, g.in_c);
    const Span h = WindowTaps(o.h, g.pad_top, g.kernel_h, g.stride_h, g.in_h);
    const Span w = WindowTaps(o.w, g.pad_left, g.kernel_w, g.stride_w, g.in_w);
    // Every window holds at least one input element (window.h's padding).
    int64_t best = ((o.b * g.in_h + h.lo) * g.in_w + w.lo) * g.in_c + o.c;
    float acc = is_max ? LoadFloat(x, xb, best) : 0.0f;
    for (int64_t ih = h.lo; ih < h.hi; ++ih) {
      for (int64_t iw = w.lo; iw < w.hi; ++iw) {
        const int64_t at = ((o.b * g.in_h + ih) * g.in_w + iw) * g.in_c + o.c;
        const float v = LoadFloat(x, xb, at);
        if (!is_max) {
          acc = Add(acc, v);
        } else if (v > acc) {
          acc = v;
          best = at;
        }
      }
    }
    StoreFloat(y, yb, i,
               is_max ? acc : Div(acc, static_cast<float>((h.hi - h.lo) * (w.hi - w.lo))));
    if (argmax != nullptr) argmax[i] = best;
  });
}

int RunPool2DBackward(const Pool2DBackwardArgs& a, KernelTarget target) {
  const WindowGeometry g = a.g;
  const bool is_max = a.kind == PoolKind::kMax;
  const void* dy = a.dy;
  const int64_t* argmax = a.argmax;
  void* dx = a.dx;
  const bool dyb = a.dy_bf16, dxb = a.dx_bf16;
  return ForEach(g.batch * g.in_h * g.in_w * g.in_c, target, [=] __host__ __device__(int64_t i) {
    const Nhwc x = Unflatten(i, g.in_h, g.in_w, g.in_c);
    const Span h = WindowsContaining(x.h, g.pad_top, g.kernel_h, g.stride_h, g.out_h);
    const Span w = WindowsContaining(x.w, g.pad_left, g.kernel_w, g.stride_w, g.out_w);
    float acc = 0.0f;
    for (int64_t oh = h.lo; oh < h.hi; ++oh) {
      for (int64_t ow = w.lo; ow < w.hi; ++ow) {
        const int64_t o = ((x.b * g.out_h + oh) * g.out_w + ow) * g.in_c + x.c;
        if (!is_max) {
          acc = Add(acc, Div(LoadFloat(dy, dyb, o), TapCount(g, oh, ow)));
        } else if (argmax[o] == i) {
          acc = Add(acc, LoadFloat(dy, dyb, o));
        }
      }
    }
    StoreFloat(dx, dxb, i, acc);
  });
}

}  // namespace sluice::gpu::backend::internal
