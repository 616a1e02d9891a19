// Normalize and PerImageStandardization (declared in image_ops.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "sluice/ops/image_ops.h"
#include "sluice/ops/internal/image_dims.h"
#include "sluice/ops/internal/row_ops.h"
#include "sluice/ops/internal/simd.h"

namespace sluice::ops {
namespace {

template <typename T>
inline float F(T v) {
  return static_cast<float>(v);
}

// Calls fn(T{}) for a numeric dtype.
template <typename Fn>
void VisitNumeric(DType dtype, Fn&& fn) {
  VisitDType(dtype, [&](auto v) {
    if constexpr (!std::is_same_v<decltype(v), std::string_view>) fn(v);
  });
}

#if defined(__x86_64__) && defined(__GNUC__)
// Eight lanes of float or uint8 input converted to float.
template <typename T>
__attribute__((target("avx2"))) inline __m256 Load8AsF8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm256_loadu_ps(p);
  } else {
    int64_t bytes;
    std::memcpy(&bytes, p, sizeof bytes);
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes)));
  }
}
#endif

}  // namespace
}  // namespace sluice::ops

namespace sluice::ops_internal {

using ops::F;

RowNormalizer::RowNormalizer(const float* mean, const float* stddev, int64_t channels)
    : channels_(channels),
      mean_(mean, mean + channels),
      stddev_(stddev, stddev + channels),
      use_avx2_(false) {
#if defined(__x86_64__) && defined(__GNUC__)
  use_avx2_ = channels <= 8 && CpuHasAvx2();
#endif
  // AVX2: whole pixels and whole vectors, 8 elements if C divides 8, else
  // 8 pixels. Four lanes: a block of whole pixels that is also a multiple of
  // four elements, so the lanes line up with the channels.
  block8_ = channels <= 8 ? (8 % channels == 0 ? 8 : 8 * channels) : 0;
  block4_ = channels <= kMaxBlock / 4 ? 4 * channels * (kMaxBlock / (4 * channels)) : 0;
  for (int64_t j = 0; j < block8_; ++j) {
    m8_[j] = mean[j % channels];
    s8_[j] = stddev[j % channels];
  }
  for (int64_t j = 0; j < block4_; ++j) {
    m4_[j] = mean[j % channels];
    s4_[j] = stddev[j % channels];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The AVX2 main loop: the same subtraction and division per lane as the
// four-lane and scalar loops (no FMA), so the same bits. Returns how many
// elements it did (whole blocks).
template <typename T>
__attribute__((target("avx2"))) int64_t RowNormalizer::Avx2(const T* in, int64_t n,
                                                            float* out) const {
  int64_t i = 0;
  for (; i + block8_ <= n; i += block8_) {
    for (int64_t j = 0; j < block8_; j += 8) {
      const __m256 x = _mm256_sub_ps(ops::Load8AsF8(in + i + j), _mm256_load_ps(m8_ + j));
      _mm256_storeu_ps(out + i + j, _mm256_div_ps(x, _mm256_load_ps(s8_ + j)));
    }
  }
  return i;
}
#endif

template <typename T>
void RowNormalizer::Run(const T* in, int64_t n, float* out) const {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, uint8_t>) {
    if (use_avx2_) {
      // Whole pixels are done, so the rest starts on channel 0 again.
      const int64_t done = Avx2(in, n, out);
      in += done;
      out += done;
      n -= done;
    }
  }
#endif
  const float* mean = mean_.data();
  const float* sd = stddev_.data();
  const int64_t channels = channels_;
  if (block4_ == 0) {  // wide pixels: the lanes run over the channels
    for (int64_t i = 0; i < n; i += channels) {
      int64_t c = 0;
      for (; c + 4 <= channels; c += 4) {
        StoreF4(out + i + c, (Load4AsF4(in + i + c) - LoadF4(mean + c)) / LoadF4(sd + c));
      }
      for (; c < channels; ++c) out[i + c] = (F(in[i + c]) - mean[c]) / sd[c];
    }
    return;
  }
  int64_t i = 0;
  for (; i + block4_ <= n; i += block4_) {
    for (int64_t j = 0; j < block4_; j += 4) {
      StoreF4(out + i + j, (Load4AsF4(in + i + j) - LoadF4(m4_ + j)) / LoadF4(s4_ + j));
    }
  }
  for (int64_t j = 0; i + j < n; ++j) out[i + j] = (F(in[i + j]) - m4_[j]) / s4_[j];
}

void RowNormalizer::Apply(const float* in, int64_t n, float* out) const { Run(in, n, out); }

#if defined(__x86_64__) && defined(__GNUC__)
// ApplyMirrored's main loop for 3 channels: eight pixels (24 floats, three
// vectors) at a time, put in reverse pixel order with lane permutes and
// blends, then Avx2's subtraction and division with the same tables (the
// output starts on channel 0 every 24 floats). Returns the pixels done.
__attribute__((target("avx2"))) int64_t RowNormalizer::MirroredRgbAvx2(const float* in,
                                                                       int64_t pixels,
                                                                       float* out) const {
  // Output float j of a block is input float 3 * (7 - j / 3) + j % 3:
  //   out0 = 21 22 23 18 19 20 15 16, out1 = 17 12 13 14 9 10 11 6,
  //   out2 = 7 8 3 4 5 0 1 2 (inputs 0-7 in v0, 8-15 in v1, 16-23 in v2).
  const __m256i i0a = _mm256_setr_epi32(5, 6, 7, 2, 3, 4, 0, 0);  // lane 6 from v1, others v2
  const __m256i i0b = _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 7, 0);
  const __m256i i1a = _mm256_setr_epi32(1, 4, 5, 6, 1, 2, 3, 6);  // lane 0 from v2, 7 from v0
  const __m256i i2a = _mm256_setr_epi32(7, 0, 3, 4, 5, 0, 1, 2);  // lane 1 from v1, others v0
  const __m256 m0 = _mm256_load_ps(m8_), m1 = _mm256_load_ps(m8_ + 8),
               m2 = _mm256_load_ps(m8_ + 16);
  const __m256 s0 = _mm256_load_ps(s8_), s1 = _mm256_load_ps(s8_ + 8),
               s2 = _mm256_load_ps(s8_ + 16);
  int64_t x = 0;
  for (; x + 8 <= pixels; x += 8) {
    const float* src = in + 3 * (pixels - 8 - x);
    const __m256 v0 = _mm256_loadu_ps(src), v1 = _mm256_loadu_ps(src + 8),
                 v2 = _mm256_loadu_ps(src + 16);
    const __m256 o0 =
        _mm256_blend_ps(_mm256_permutevar8x32_ps(v2, i0a), _mm256_permutevar8x32_ps(v1, i0b), 0x40);
    const __m256 p1 = _mm256_permutevar8x32_ps(v1, i1a);
    __m256 o1 = _mm256_blend_ps(p1, _mm256_permutevar8x32_ps(v2, i1a), 0x01);
    o1 = _mm256_blend_ps(o1, _mm256_permutevar8x32_ps(v0, i1a), 0x80);
    const __m256 o2 =
        _mm256_blend_ps(_mm256_permutevar8x32_ps(v0, i2a), _mm256_permutevar8x32_ps(v1, i2a), 0x02);
    float* dst = out + 3 * x;
    _mm256_storeu_ps(dst, _mm256_div_ps(_mm256_sub_ps(o0, m0), s0));
    _mm256_storeu_ps(dst + 8, _mm256_div_ps(_mm256_sub_ps(o1, m1), s1));
    _mm256_storeu_ps(dst + 16, _mm256_div_ps(_mm256_sub_ps(o2, m2), s2));
  }
  return x;
}
#endif

void RowNormalizer::ApplyMirrored(const float* in, int64_t pixels, float* out) const {
  const int64_t C = channels_;
  int64_t x = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (use_avx2_ && C == 3) x = MirroredRgbAvx2(in, pixels, out);
#endif
  for (; x < pixels; ++x) {
    const float* src = in + (pixels - 1 - x) * C;
    for (int64_t c = 0; c < C; ++c) out[x * C + c] = (src[c] - mean_[c]) / stddev_[c];
  }
}

}  // namespace sluice::ops_internal

namespace sluice::ops {
namespace {

// out[i] = (in[i] - mean[i % C]) / stddev[i % C].
template <typename T>
void NormalizeLoop(const T* in, int64_t n, int64_t channels, const float* mean, const float* sd,
                   float* out) {
  ops_internal::RowNormalizer(mean, sd, channels).Run(in, n, out);
}

Status CheckNormalize(const Tensor& image, std::span<const float> mean,
                      std::span<const float> stddev, std::vector<float>* m, std::vector<float>* s) {
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(image.dtype(), "Normalize"));
  const Shape& shape = image.shape();
  if (shape.rank() < 1) {
    return Status::InvalidArgument("Normalize: image must have a channel dimension, got shape " +
                                   shape.ToString());
  }
  const int64_t channels = shape.dim(shape.rank() - 1);
  auto expand = [&](std::span<const float> v, const char* name, std::vector<float>* dst) {
    if (v.size() == 1) {
      dst->assign(channels, v[0]);
    } else if (!v.empty() && static_cast<int64_t>(v.size()) == channels) {
      dst->assign(v.begin(), v.end());
    } else {
      return Status::InvalidArgument("Normalize: " + std::string(name) + " has " +
                                     std::to_string(v.size()) + " values, expected 1 or " +
                                     std::to_string(channels) + " (channels of shape " +
                                     shape.ToString() + ")");
    }
    return Status::OK();
  };
  SLUICE_RETURN_IF_ERROR(expand(mean, "mean", m));
  SLUICE_RETURN_IF_ERROR(expand(stddev, "stddev", s));
  for (float x : *s) {
    if (x == 0.0f || !std::isfinite(x)) {
      return Status::InvalidArgument("Normalize: stddev values must be finite and non-zero, got " +
                                     std::to_string(x));
    }
  }
  return Status::OK();
}

}  // namespace

Status NormalizeInto(const Tensor& image, std::span<const float> mean,
                     std::span<const float> stddev, Tensor* out) {
  std::vector<float> m, s;
  SLUICE_RETURN_IF_ERROR(CheckNormalize(image, mean, stddev, &m, &s));
  SLUICE_RETURN_IF_ERROR(
      ops_internal::CheckOutput(image, out, DType::kFloat32, image.shape(), "NormalizeInto"));
  const int64_t channels = image.shape().dim(image.shape().rank() - 1);
  if (image.num_elements() == 0) return Status::OK();
  VisitNumeric(image.dtype(), [&](auto t) {
    using T = decltype(t);
    NormalizeLoop(image.flat<T>().data(), image.num_elements(), channels, m.data(), s.data(),
                  out->flat<float>().data());
  });
  return Status::OK();
}

Result<Tensor> Normalize(const Tensor& image, std::span<const float> mean,
                         std::span<const float> stddev) {
  std::vector<float> m, s;
  SLUICE_RETURN_IF_ERROR(CheckNormalize(image, mean, stddev, &m, &s));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kFloat32, image.shape()));
  SLUICE_RETURN_IF_ERROR(NormalizeInto(image, mean, stddev, &out));
  return out;
}

Result<Tensor> Normalize(Tensor&& image, std::span<const float> mean,
                         std::span<const float> stddev) {
  if (image.dtype() != DType::kFloat32 || !image.buffer().unique()) {
    return Normalize(static_cast<const Tensor&>(image), mean, stddev);
  }
  std::vector<float> m, s;
  SLUICE_RETURN_IF_ERROR(CheckNormalize(image, mean, stddev, &m, &s));
  const int64_t channels = image.shape().dim(image.shape().rank() - 1);
  float* data = image.flat<float>().data();
  // Element by element, each read before it is written: in place is safe.
  if (image.num_elements() > 0)
    NormalizeLoop(data, image.num_elements(), channels, m.data(), s.data(), data);
  return std::move(image);
}

Result<Tensor> PerImageStandardization(const Tensor& image) {
  const Shape& shape = image.shape();
  SLUICE_RETURN_IF_ERROR(ops_internal::CheckNumeric(image.dtype(), "PerImageStandardization"));
  if (shape.rank() < 3) {
    return Status::InvalidArgument(
        "PerImageStandardization: image must have at least 3 dimensions, got shape " +
        shape.ToString());
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kFloat32, shape));
  const int r = shape.rank();
  const int64_t n = shape.dim(r - 3) * shape.dim(r - 2) * shape.dim(r - 1);
  if (n == 0) return out;
  const int64_t images = image.num_elements() / n;
  // TF: rsqrt(float(N)) in float32.
  const float min_stddev = 1.0f / std::sqrt(static_cast<float>(n));
  VisitNumeric(image.dtype(), [&](auto t) {
    using T = decltype(t);
    for (int64_t b = 0; b < images; ++b) {
      const T* x = image.flat<T>().data() + b * n;
      float* y = out.flat<float>().data() + b * n;
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += F(x[i]);
      const double mean = sum / static_cast<double>(n);
      double sq = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double d = F(x[i]) - mean;
        sq += d * d;
      }
      const float mean_f = static_cast<float>(mean);
      const float stddev = static_cast<float>(std::sqrt(sq / static_cast<double>(n)));
      const float adjusted = std::max(stddev, min_stddev);
      for (int64_t i = 0; i < n; ++i) y[i] = (F(x[i]) - mean_f) / adjusted;
    }
  });
  return out;
}

}  // namespace sluice::ops
