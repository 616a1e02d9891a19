// Convolution, padding and filter-layout element loops (conv_kernels.h):
// one thread per output element, run on a GPU or on the host. Pooling is
// in pool_kernels.cu.
#include <type_traits>

#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"
#include "sluice/nn/cuda/internal/conv_kernels.h"
#include "sluice/nn/cuda/internal/window_index.cuh"

namespace sluice::gpu_backend_internal {

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
  if constexpr (std::is_same_v<Out, ::sluice::gpu_internal::BFloat>) {
    return ::sluice::gpu_internal::FloatToBFloat(v);
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
          ::sluice::gpu_internal::ToFloat(in[((r % taps) * in_c + c) * out_c + r / taps]));
    });
  }
  return ForEach(taps * in_c * out_c, target, [=] __host__ __device__(int64_t i) {  // [s, c, o]
    const int64_t o = i % out_c;
    const int64_t r = i / out_c;  // s · in_c + c
    out[i] =
        StoreAs<Out>(::sluice::gpu_internal::ToFloat(in[(o * taps + r / in_c) * in_c + r % in_c]));
  });
}

}  // namespace

int RunFilterTranspose(const FilterTransposeArgs& a, KernelTarget target) {
  using ::sluice::gpu_internal::BFloat;
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

}  // namespace sluice::gpu_backend_internal
