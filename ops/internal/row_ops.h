// Row-at-a-time forms of the flip and normalize kernels, for fused ops that
// finish each output row while it is in L1 (decode_crop_resize.cc). The
// arithmetic is that of FlipLeftRight and Normalize exactly: a row put
// through these equals the same row of the whole-image ops. Internal; no
// state (thread-safe).
#ifndef SLUICE_OPS_INTERNAL_ROW_OPS_H_
#define SLUICE_OPS_INTERNAL_ROW_OPS_H_

#include <cstdint>
#include <vector>

namespace sluice::ops_internal {

// Copies `n` pixels of `pixel_bytes` bytes from src to dst in reverse order.
// REQUIRES: src and dst do not overlap. Defined in flip.cc.
void ReverseRow(const uint8_t* src, int64_t n, int64_t pixel_bytes, uint8_t* dst);

// out[i] = (in[i] - mean[i % C]) / stddev[i % C], Normalize's kernel with
// its per-channel tables built once, for calls on many short rows. Every
// path (AVX2, four lanes, scalar) subtracts then divides, so any split of
// an image into rows gives the same bits. Immutable after construction
// (thread-safe to share).
class RowNormalizer {
 public:
  // REQUIRES: channels >= 1; mean and stddev hold `channels` values each.
  RowNormalizer(const float* mean, const float* stddev, int64_t channels);
  // n elements, a multiple of channels; in == out is allowed.
  void Apply(const float* in, int64_t n, float* out) const;
  // Apply of the row `in` mirrored (ReverseRow then Apply, the same bits)
  // in one pass: `pixels` pixels of channels floats each. REQUIRES: in and
  // out do not overlap.
  void ApplyMirrored(const float* in, int64_t pixels, float* out) const;
  // Apply for any numeric input type T; instantiated in normalize.cc only.
  template <typename T>
  void Run(const T* in, int64_t n, float* out) const;

 private:
  static constexpr int64_t kMaxBlock = 64;
  template <typename T>
  int64_t Avx2(const T* in, int64_t n, float* out) const;
  int64_t MirroredRgbAvx2(const float* in, int64_t pixels, float* out) const;

  int64_t channels_;
  std::vector<float> mean_, stddev_;
  bool use_avx2_;
  int64_t block8_ = 0, block4_ = 0;
  alignas(32) float m8_[kMaxBlock] = {}, s8_[kMaxBlock] = {};
  float m4_[kMaxBlock] = {}, s4_[kMaxBlock] = {};
};

}  // namespace sluice::ops_internal

#endif  // SLUICE_OPS_INTERNAL_ROW_OPS_H_
