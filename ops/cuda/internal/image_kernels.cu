// Crop, flip, resize and normalize element loops (image_kernels.h): one
// thread per output element, run on a GPU or on the host.
#include <cmath>

#include "sluice/ops/cuda/internal/image_kernels.h"
#include "sluice/device/cuda/kernel_util.cuh"

namespace sluice::gpu_internal {
namespace {

template <typename U>
int Crop(const CropArgs& a, KernelTarget target) {
  const auto* in = static_cast<const U*>(a.in);
  auto* out = static_cast<U*>(a.out);
  const int64_t row = a.width * a.in_geometry.channels;  // elements per output row
  const int64_t in_row = a.in_geometry.width * a.in_geometry.channels;
  const int64_t in_image = a.in_geometry.height * in_row;
  const int64_t height = a.height;
  const int64_t first = a.y0 * in_row + a.x0 * a.in_geometry.channels;
  return ForEach(a.in_geometry.batch * height * row, target, [=] __host__ __device__(int64_t i) {
    const int64_t r = i / row;  // output row over the whole batch
    const int64_t b = r / height;
    out[i] = in[b * in_image + first + (r - b * height) * in_row + (i - r * row)];
  });
}

struct FlipBits {
  uint32_t words[kMaxFlipImages / 32];
};

template <typename U>
int Flip(const FlipArgs& a, KernelTarget target) {
  const auto* in = static_cast<const U*>(a.in);
  auto* out = static_cast<U*>(a.out);
  const ImageGeometry g = a.geometry;
  const int64_t row = g.width * g.channels;
  const int64_t image = g.height * row;
  const bool up_down = a.up_down;
  FlipBits bits;
  memcpy(bits.words, a.flip, sizeof bits.words);
  return ForEach(g.batch * image, target, [=] __host__ __device__(int64_t i) {
    const int64_t b = i / image;
    const int64_t at = i - b * image;  // within the image
    int64_t src = at;
    if ((bits.words[b >> 5] >> (b & 31)) & 1u) {
      const int64_t y = at / row;
      const int64_t in_row = at - y * row;
      if (up_down) {
        src = (g.height - 1 - y) * row + in_row;
      } else {
        const int64_t x = in_row / g.channels;
        src = y * row + (g.width - 1 - x) * g.channels + (in_row - x * g.channels);
      }
    }
    out[i] = in[b * image + src];
  });
}

// NearestTap: ops_internal's NearestTaps, step for step (BilinearTap is
// in kernel_util.cuh).
SLUICE_HD int64_t NearestTap(int64_t i, float scale, int64_t in_size) {
  const int64_t x = static_cast<int64_t>(floorf(Mul(Add(static_cast<float>(i), 0.5f), scale)));
  return x < 0 ? 0 : (x > in_size - 1 ? in_size - 1 : x);
}

// Output element i of a resize: the input image's first element, the
// output row and column, the channel.
struct ResizeCoord {
  int64_t image, y, x, c;
};
struct ResizeShape {
  ImageGeometry in;
  int64_t out_h, out_w;
  float sy, sx;
  SLUICE_HD ResizeCoord At(int64_t i) const {
    const int64_t C = in.channels;
    const int64_t p = i / C;
    const int64_t q = p / out_w;
    return ResizeCoord{(q / out_h) * in.height * in.width * C, q % out_h, p % out_w, i % C};
  }
  int64_t count() const { return in.batch * out_h * out_w * in.channels; }
};

template <typename U>
int ResizeNearest(const ResizeArgs& a, const ResizeShape& s, KernelTarget target) {
  const auto* in = static_cast<const U*>(a.in);
  auto* out = static_cast<U*>(a.out);
  return ForEach(s.count(), target, [=] __host__ __device__(int64_t i) {
    const ResizeCoord k = s.At(i);
    const int64_t y = NearestTap(k.y, s.sy, s.in.height);
    const int64_t x = NearestTap(k.x, s.sx, s.in.width);
    out[i] = in[k.image + (y * s.in.width + x) * s.in.channels + k.c];
  });
}

template <typename T>
int ResizeBilinear(const ResizeArgs& a, const ResizeShape& s, KernelTarget target) {
  const auto* in = static_cast<const T*>(a.in);
  auto* out = static_cast<float*>(a.out);
  return ForEach(s.count(), target, [=] __host__ __device__(int64_t i) {
    const ResizeCoord k = s.At(i);
    const int64_t C = s.in.channels;
    const LerpTap ty = BilinearTap(k.y, s.sy, s.in.height);
    const LerpTap tx = BilinearTap(k.x, s.sx, s.in.width);
    const T* top = in + k.image + ty.lower * s.in.width * C + k.c;
    const T* bottom = in + k.image + ty.upper * s.in.width * C + k.c;
    // Horizontal lerps of both rows, then the vertical one: ops/'s order.
    const float tl = ToFloat(top[tx.lower * C]);
    const float t = Add(tl, Mul(Sub(ToFloat(top[tx.upper * C]), tl), tx.lerp));
    const float bl = ToFloat(bottom[tx.lower * C]);
    const float b = Add(bl, Mul(Sub(ToFloat(bottom[tx.upper * C]), bl), tx.lerp));
    out[i] = Add(t, Mul(Sub(b, t), ty.lerp));
  });
}

struct ChannelParams {
  float mean[kMaxNormalizeChannels];
  float stddev[kMaxNormalizeChannels];
};

template <typename T>
int Normalize(const NormalizeArgs& a, KernelTarget target) {
  ChannelParams p;
  memcpy(p.mean, a.mean, sizeof p.mean);
  memcpy(p.stddev, a.stddev, sizeof p.stddev);
  const auto* in = static_cast<const T*>(a.in);
  float* out = a.out;
  const int64_t C = a.channels;
  return ForEach(a.count, target, [=] __host__ __device__(int64_t i) {
    const int64_t c = i % C;
    out[i] = Div(Sub(ToFloat(in[i]), p.mean[c]), p.stddev[c]);
  });
}

}  // namespace

int RunCrop(const CropArgs& a, KernelTarget target) {
  return VisitElemSize(a.elem_size, [&](auto u) { return Crop<decltype(u)>(a, target); });
}

int RunFlip(const FlipArgs& a, KernelTarget target) {
  return VisitElemSize(a.elem_size, [&](auto u) { return Flip<decltype(u)>(a, target); });
}

int RunResize(const ResizeArgs& a, KernelTarget target) {
  const ResizeShape s{a.in_geometry, a.out_height, a.out_width, a.scale_y, a.scale_x};
  if (a.method == ResizeArgs::Method::kNearest) {
    return VisitElemSize(ElemTypeSize(a.type),
                         [&](auto u) { return ResizeNearest<decltype(u)>(a, s, target); });
  }
  return VisitElemType(a.type, [&](auto t) { return ResizeBilinear<decltype(t)>(a, s, target); });
}

int RunNormalize(const NormalizeArgs& a, KernelTarget target) {
  return VisitElemType(a.type, [&](auto t) { return Normalize<decltype(t)>(a, target); });
}

}  // namespace sluice::gpu_internal
