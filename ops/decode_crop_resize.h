// Fused decode + random crop + resize: the ImageNet training recipe on
// encoded bytes, without decoding what the crop throws away.
//
// DecodeRandomCropResize() samples the crop window from the header's size
// alone (SampleRandomResizedCrop: the same window, for the same Rng, as the
// unfused path), then, for a JPEG, decodes only that window's iMCU rows and
// columns at the largest DCT scale 1/d (d in 1, 2, 4, 8) that keeps the
// window at least the output size, and resizes the (1/d-scaled) window to
// the output. The scaled decode averages d x d pixels in the DCT domain, so
// the result is close to the unfused path with antialias (docs/ops.md
// states the measured difference). PNG and other formats are decoded whole,
// cropped as a view and resized. Optionally the result is then mirrored and
// normalized row by row while each row is in cache (DALI's
// crop_mirror_normalize), with the bits of FlipLeftRight and Normalize.
//
// Ownership: `bytes` is read only during the call; the returned float32
// tensor [size.height, size.width, channels] owns its memory (the *Into
// forms write a caller's tensor instead). Thread-safe
// (the JPEG decoder is per thread).
#ifndef SLUICE_OPS_DECODE_CROP_RESIZE_H_
#define SLUICE_OPS_DECODE_CROP_RESIZE_H_

#include <array>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/rng.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/image_limits.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/jpeg.h"
#include "sluice/ops/resize.h"

namespace sluice::ops {

// Left-right mirroring of DecodeCropResizeOptions.
enum class Mirror { kNever, kAlways, kRandom };

struct DecodeCropResizeOptions {
  ImageSize size = {224, 224};                           // output height, width
  std::array<double, 2> scale = {0.08, 1.0};             // of the image's area
  std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0};  // width / height
  int channels = 3;                                      // 1 or 3
  ResizeMethod method = ResizeMethod::kBilinear;
  JpegDctMethod dct_method = JpegDctMethod::kIntegerFast;
  // false: decode the whole image (every row, at full resolution), crop,
  // resize (the reference path; same window). Results then equal
  // RandomResizedCrop(DecodeImage(bytes)). A JPEG resized bilinearly is
  // streamed: rows are resized as the decoder produces them, a few at a
  // time, so the decoded image is never held whole.
  bool fused = true;
  // Then, as FlipLeftRight: kRandom mirrors with probability 1/2, drawing
  // from the rng after the window, as RandomFlipLeftRight does in the
  // unfused chain (DecodeCropResize, which has no rng, rejects it).
  Mirror mirror = Mirror::kNever;
  // Then, as Normalize: (x - mean[c]) / stddev[c], each one value or one per
  // channel; both empty: not normalized. Needs a float output (not kNearest).
  std::vector<float> mean, stddev;
  int64_t max_pixels = kDefaultMaxImagePixels;
  std::string_view name;  // for error messages; not copied
};

// Samples the window with `rng`, then decodes, crops and resizes.
Result<Tensor> DecodeRandomCropResize(std::string_view bytes, Rng& rng,
                                      const DecodeCropResizeOptions& options = {});
// The same with a given window, in the image's full-resolution pixels.
Result<Tensor> DecodeCropResize(std::string_view bytes, const CropWindow& window,
                                const DecodeCropResizeOptions& options = {});

// The same into a caller's tensor (a batch row: MapContext::AllocateOutput),
// which must be float32 (uint8 for kNearest) [size.height, size.width,
// channels]; InvalidArgument otherwise. On error its contents are
// unspecified.
Status DecodeRandomCropResizeInto(std::string_view bytes, Rng& rng,
                                  const DecodeCropResizeOptions& options, Tensor* out);
Status DecodeCropResizeInto(std::string_view bytes, const CropWindow& window,
                            const DecodeCropResizeOptions& options, Tensor* out);

// The DCT scale denominator the fused path uses for `window` and `size`: the
// largest d in {8, 4, 2, 1} with floor(window.height / d) >= size.height and
// floor(window.width / d) >= size.width.
int FusedScaleDenominator(const CropWindow& window, ImageSize size);

}  // namespace sluice::ops

#endif  // SLUICE_OPS_DECODE_CROP_RESIZE_H_
