#include "sluice/ops/internal/resize_taps.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace sluice::ops_internal {
namespace {

// TF computes every scale as float(in) / float(out) and every coordinate in
// float32; so do we, in the same order of operations.
float Scale(int64_t in_size, int64_t out_size) {
  return static_cast<float>(in_size) / static_cast<float>(out_size);
}

// Sums below this are too small to renormalize by (TF's threshold).
constexpr float kTinyWeightSum = 1000.0f * std::numeric_limits<float>::min();

// Keys' cubic with a = -0.5, tabulated at 1024 steps of the fractional
// position t in [0, 1]: entry 2i is the weight of the two nearer taps at
// distance i/1024, entry 2i+1 of the farther taps at distance 1 + i/1024.
// Computed in double and rounded to float, as TF's table.
constexpr int kTableSteps = 1024;
const std::array<float, 2 * (kTableSteps + 1)>& KeysTable() {
  static const auto table = [] {
    std::array<float, 2 * (kTableSteps + 1)> t{};
    const double a = -0.5;
    for (int i = 0; i <= kTableSteps; ++i) {
      const double near = static_cast<float>(static_cast<double>(i) / kTableSteps);
      t[2 * i] = static_cast<float>(((a + 2) * near - (a + 3)) * near * near + 1);
      const double far = near + 1.0;
      t[2 * i + 1] = static_cast<float>(((a * far - 5 * a) * far + 8 * a) * far - 4 * a);
    }
    return t;
  }();
  return table;
}

float KernelRadius(SamplingKernel k) {
  switch (k) {
    case SamplingKernel::kTriangle: return 1.0f;
    case SamplingKernel::kKeysCubic:
    case SamplingKernel::kMitchellCubic: return 2.0f;
    case SamplingKernel::kLanczos3: return 3.0f;
    case SamplingKernel::kLanczos5: return 5.0f;
    case SamplingKernel::kGaussian: return 1.5f;
  }
  return 1.0f;
}

// The kernels of TF's sampling_kernels.h, evaluated at |x|, in float.
float KernelAt(SamplingKernel k, float x) {
  x = std::abs(x);
  switch (k) {
    case SamplingKernel::kTriangle: return x < 1.0f ? 1.0f - x : 0.0f;
    case SamplingKernel::kKeysCubic:
      if (x >= 2.0f) return 0.0f;
      if (x >= 1.0f) return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
      return ((1.5f * x - 2.5f) * x) * x + 1.0f;
    case SamplingKernel::kMitchellCubic:
      if (x >= 2.0f) return 0.0f;
      if (x >= 1.0f) return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
      return (((7.0f / 6.0f) * x - 2.0f) * x) * x + 8.0f / 9.0f;
    case SamplingKernel::kLanczos3:
    case SamplingKernel::kLanczos5: {
      const float r = KernelRadius(k);
      constexpr float kPi = 3.14159265359f;
      if (x > r) return 0.0f;
      if (x <= 1e-3f) return 1.0f;
      return r * std::sin(kPi * x) * std::sin(kPi * x / r) / (kPi * kPi * x * x);
    }
    case SamplingKernel::kGaussian: {
      constexpr float kRadius = 1.5f, kSigma = kRadius / 3.0f;
      if (x >= kRadius) return 0.0f;
      return static_cast<float>(std::exp(-x * x / (2.0 * kSigma * kSigma)));
    }
  }
  return 0.0f;
}

void Init(AxisTaps* t, int64_t out_size, int max_taps) {
  t->max_taps = max_taps;
  t->start.assign(out_size, 0);
  t->count.assign(out_size, 0);
  t->weights.assign(out_size * max_taps, 0.0f);
}

}  // namespace

std::vector<int32_t> NearestTaps(int64_t in_size, int64_t out_size) {
  const float scale = Scale(in_size, out_size);
  std::vector<int32_t> idx(out_size);
  for (int64_t i = 0; i < out_size; ++i) {
    // floor((i + 0.5) * scale), without subtracting 0.5 first.
    const int64_t x = static_cast<int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale));
    idx[i] = static_cast<int32_t>(std::max<int64_t>(0, std::min(x, in_size - 1)));
  }
  return idx;
}

LerpTaps BilinearTaps(int64_t in_size, int64_t out_size) {
  const float scale = Scale(in_size, out_size);
  LerpTaps t;
  t.lower.resize(out_size);
  t.upper.resize(out_size);
  t.lerp.resize(out_size);
  for (int64_t i = 0; i < out_size; ++i) {
    const float pos = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float below = std::floor(pos);
    t.lower[i] = static_cast<int32_t>(std::max<int64_t>(static_cast<int64_t>(below), 0));
    t.upper[i] =
        static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(std::ceil(pos)), in_size - 1));
    t.lerp[i] = pos - below;
  }
  return t;
}

AxisTaps BicubicTaps(int64_t in_size, int64_t out_size) {
  const float scale = Scale(in_size, out_size);
  const auto& table = KeysTable();
  AxisTaps t;
  Init(&t, out_size, 4);
  for (int64_t i = 0; i < out_size; ++i) {
    const float pos = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const int64_t base = static_cast<int64_t>(std::floor(pos));
    const float frac = pos - static_cast<float>(base);
    const int64_t step = std::lrint(frac * kTableSteps);  // float product, ties to even
    // Taps base-1 .. base+2 at distances 1+t, t, 1-t, 2-t.
    float w[4] = {table[step * 2 + 1], table[step * 2], table[(kTableSteps - step) * 2],
                  table[(kTableSteps - step) * 2 + 1]};
    for (int k = 0; k < 4; ++k) {
      const int64_t src = base - 1 + k;
      if (src < 0 || src >= in_size) w[k] = 0.0f;
    }
    const float sum = w[0] + w[1] + w[2] + w[3];
    if (std::abs(sum) >= kTinyWeightSum) {
      const float inv = 1.0f / sum;
      for (float& v : w) v *= inv;
    }
    // Keep the in-range taps: a contiguous run (the others weigh 0).
    const int64_t first = std::max<int64_t>(base - 1, 0);
    const int64_t last = std::min<int64_t>(base + 2, in_size - 1);
    t.start[i] = static_cast<int32_t>(first);
    t.count[i] = static_cast<int32_t>(last - first + 1);
    for (int64_t s = first; s <= last; ++s) t.weights[i * 4 + (s - first)] = w[s - (base - 1)];
  }
  return t;
}

AxisTaps AreaTaps(int64_t in_size, int64_t out_size) {
  const float scale = Scale(in_size, out_size);
  // An output cell covers [i * scale, (i + 1) * scale) of the input.
  int max_taps = 1;
  for (int64_t i = 0; i < out_size; ++i) {
    const float lo = static_cast<float>(i) * scale, hi = static_cast<float>(i + 1) * scale;
    const int64_t n = static_cast<int64_t>(std::ceil(hi)) - static_cast<int64_t>(std::floor(lo));
    max_taps = std::max<int>(max_taps, static_cast<int>(std::min<int64_t>(n, in_size)));
  }
  AxisTaps t;
  Init(&t, out_size, max_taps);
  for (int64_t i = 0; i < out_size; ++i) {
    const float lo = static_cast<float>(i) * scale;
    const float hi = static_cast<float>(i + 1) * scale;
    const int64_t first = static_cast<int64_t>(std::floor(lo));
    const int64_t end = static_cast<int64_t>(std::ceil(hi));
    // Coverage of input cell v: TF's formula (whole cells in the middle
    // count 1; the cells at both ends count the covered fraction).
    auto coverage = [&](int64_t v) -> float {
      const float fv = static_cast<float>(v), fv1 = static_cast<float>(v + 1);
      if (fv < lo) return fv1 > hi ? scale : fv1 - lo;
      return fv1 > hi ? hi - fv : 1.0f;
    };
    t.start[i] = static_cast<int32_t>(first);
    float* w = &t.weights[i * max_taps];
    int count = 0;
    for (int64_t v = first; v < end; ++v) {
      const float cw = (v == first || v == end - 1) ? coverage(v) : 1.0f;
      if (v < in_size) {
        w[count++] = cw;
      } else {
        w[count - 1] += cw;  // float rounding put `end` past the image: TF clamps the index
      }
    }
    t.count[i] = count;
  }
  return t;
}

float AreaNormalizer(int64_t in_height, int64_t out_height, int64_t in_width, int64_t out_width) {
  const float hs = Scale(in_height, out_height), ws = Scale(in_width, out_width);
  return static_cast<float>(1.0 / (hs * ws));
}

AxisTaps KernelTaps(SamplingKernel kernel, int64_t in_size, int64_t out_size, bool antialias) {
  const float scale = static_cast<float>(out_size) / static_cast<float>(in_size);
  const float inv_scale = static_cast<float>(1.0 / scale);
  const float kernel_scale = antialias ? std::max(inv_scale, 1.0f) : 1.0f;
  const float radius = KernelRadius(kernel) * kernel_scale;
  const int span =
      static_cast<int>(std::min<int64_t>(2 * static_cast<int64_t>(std::ceil(radius)) + 1, in_size));
  const float inv_kernel_scale = 1.0f / kernel_scale;
  AxisTaps t;
  Init(&t, out_size, span);
  std::vector<float> w(span);
  for (int64_t i = 0; i < out_size; ++i) {
    const float center = (static_cast<float>(i) + 0.5f) * inv_scale;
    if (center < 0 || center > static_cast<float>(in_size)) continue;  // empty span
    int64_t first = static_cast<int64_t>(std::ceil(center - radius - 0.5f));
    int64_t last = static_cast<int64_t>(std::floor(center + radius - 0.5f));
    first = std::clamp<int64_t>(first, 0, in_size - 1);
    last = std::clamp<int64_t>(last, 0, in_size - 1);
    const int n = static_cast<int>(std::min<int64_t>(last - first + 1, span));
    float sum = 0.0f;
    for (int k = 0; k < n; ++k) {
      const float dist = static_cast<float>(first + k) + 0.5f - center;
      w[k] = KernelAt(kernel, dist * inv_kernel_scale);
      sum += w[k];
    }
    t.start[i] = static_cast<int32_t>(first);
    if (std::abs(sum) < kTinyWeightSum) continue;  // TF leaves these weights at 0
    const float inv = 1.0f / sum;
    t.count[i] = n;
    for (int k = 0; k < n; ++k) t.weights[i * span + k] = w[k] * inv;
  }
  return t;
}

}  // namespace sluice::ops_internal
