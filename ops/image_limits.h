// Limits shared by the image decoders (JPEG, PNG, DecodeImage).
//
// A header can claim any size; decoders compare the claimed width x height
// with the `max_pixels` of their options before allocating anything, and
// answer ResourceExhausted above it. Constants only; thread-safe.
#ifndef SLUICE_OPS_IMAGE_LIMITS_H_
#define SLUICE_OPS_IMAGE_LIMITS_H_

#include <cstdint>

namespace sluice::ops {

// 2^27 = 134,217,728 pixels (e.g. 16384 x 8192, or a 108 MP phone photo):
// at most 384 MiB of RGB output. TensorFlow's own limit is an output below
// 2^29 bytes (about 179 MP as RGB); raise max_pixels for larger images.
inline constexpr int64_t kDefaultMaxImagePixels = int64_t{1} << 27;

}  // namespace sluice::ops

#endif  // SLUICE_OPS_IMAGE_LIMITS_H_
