// Per-axis resampling weights for ops::Resize: for every output row (or
// column), which input rows it reads and with which weights. Each function
// reproduces, in its own words, how the matching TensorFlow kernel computes
// its coordinates in float32, so that results agree to float rounding.
// Internal; pure functions, thread-safe.
#ifndef SLUICE_OPS_INTERNAL_RESIZE_TAPS_H_
#define SLUICE_OPS_INTERNAL_RESIZE_TAPS_H_

#include <cstdint>
#include <vector>

namespace sluice::ops_internal {

// Output i reads inputs [start[i], start[i] + count[i]) with weights
// weights[i * max_taps + k]. count[i] may be 0 (the output is 0).
struct AxisTaps {
  int max_taps = 0;
  std::vector<int32_t> start;
  std::vector<int32_t> count;
  std::vector<float> weights;
  int64_t size() const { return static_cast<int64_t>(start.size()); }
};

// Linear interpolation between two inputs: v[lower] + (v[upper] - v[lower]) * lerp.
struct LerpTaps {
  std::vector<int32_t> lower;
  std::vector<int32_t> upper;
  std::vector<float> lerp;
};

// Sampling kernels of scale_and_translate.
enum class SamplingKernel {
  kTriangle,
  kKeysCubic,
  kMitchellCubic,
  kLanczos3,
  kLanczos5,
  kGaussian
};

// REQUIRES for all: 0 < in_size, out_size < 2^31.

// resize_nearest_neighbor, half-pixel centers: the input index per output.
std::vector<int32_t> NearestTaps(int64_t in_size, int64_t out_size);
// resize_bilinear, half-pixel centers.
LerpTaps BilinearTaps(int64_t in_size, int64_t out_size);
// resize_bicubic, half-pixel centers: Keys (a = -0.5) weights looked up in a
// 1024-step table; taps outside the image get weight 0 and the rest are
// renormalized.
AxisTaps BicubicTaps(int64_t in_size, int64_t out_size);
// resize_area: the fraction of each input cell covered by the output cell.
// The product of both axes' weights times AreaNormalizer() is the average.
AxisTaps AreaTaps(int64_t in_size, int64_t out_size);
float AreaNormalizer(int64_t in_height, int64_t out_height, int64_t in_width, int64_t out_width);
// scale_and_translate with scale out/in and no translation; with
// `antialias` the kernel is widened by in/out when downsampling.
AxisTaps KernelTaps(SamplingKernel kernel, int64_t in_size, int64_t out_size, bool antialias);

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_RESIZE_TAPS_H_
