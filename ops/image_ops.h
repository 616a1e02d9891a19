// Image ops of tf.image: crops (fixed, central, random, random-resized),
// flips, rot90, dtype conversion and casts, per-channel normalization and
// per-image standardization.
//
// Images are [height, width, channels] tensors; ops that say so also take a
// batch [batch, height, width, channels]. Every op returns a tensor that owns
// new bytes, except where noted ("may share the input's bytes": then the
// result is the input itself, as TF returns its input unchanged). The *Into
// variants write into a caller's tensor of the exact dtype and shape, which
// must not share bytes with the input (checked). Bad arguments are
// InvalidArgument naming the op, the argument and the shape.
//
// Random ops take a sluice::Rng& and draw from it in a documented order, so
// a pipeline passing Rng(seed, element_index) gets the same result whatever
// its parallelism. Thread-safety: no shared state; an Rng must not be used
// by two threads at once.
#ifndef SLUICE_OPS_IMAGE_OPS_H_
#define SLUICE_OPS_IMAGE_OPS_H_

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/rng.h"
#include "sluice/core/tensor.h"
#include "sluice/ops/resize.h"

namespace sluice::ops {

// A window of an image: rows [y, y + height), columns [x, x + width).
struct CropWindow {
  int64_t y = 0;
  int64_t x = 0;
  int64_t height = 0;
  int64_t width = 0;
  friend bool operator==(const CropWindow&, const CropWindow&) = default;
};

// --- Crops (3-D image or 4-D batch; any numeric dtype) ----------------------

// tf.image.crop_to_bounding_box. InvalidArgument unless y, x >= 0,
// height, width > 0 and the window lies inside the image.
Result<Tensor> Crop(const Tensor& image, const CropWindow& window);
inline Result<Tensor> Crop(const Tensor& image, int64_t y, int64_t x, int64_t height,
                           int64_t width) {
  return Crop(image, CropWindow{y, x, height, width});
}
Status CropInto(const Tensor& image, const CropWindow& window, Tensor* out);

// tf.image.central_crop's window: start = int((side - side * fraction) / 2)
// in double precision (truncated), size = side - 2 * start. InvalidArgument
// unless 0 < fraction <= 1 and height, width > 0.
Result<CropWindow> CentralCropWindow(int64_t height, int64_t width, double fraction);
// tf.image.central_crop. fraction == 1 returns the image itself (may share
// the input's bytes).
Result<Tensor> CentralCrop(const Tensor& image, double fraction);

// tf.image.random_crop: a `size`-shaped slice of `value` (any rank; `size`
// of the same rank with 0 <= size[i] <= dim[i]) at an offset drawn uniformly
// per dimension, dimension 0 first (one Rng::UniformInt each, also for
// dimensions taken whole).
Result<Tensor> RandomCrop(const Tensor& value, const Shape& size, Rng& rng);
// RandomCrop's offsets for a value of `shape`: the draws it makes, and its
// errors. For ops that crop where RandomCrop would without the pixels (an
// encoded image's shape comes from its header, ImageOutputShape).
Result<std::vector<int64_t>> SampleRandomCrop(const Shape& shape, const Shape& size, Rng& rng);

// The ImageNet "random resized crop" window of torchvision's
// RandomResizedCrop.get_params, computed without the pixels: up to 10 tries
// of area = height * width * U(scale) and aspect ratio w/h = exp(U(log
// ratio)), w = round(sqrt(area * ratio)), h = round(sqrt(area / ratio))
// (half to even), accepted when 0 < w <= width and 0 < h <= height, at a
// uniform offset; else a central crop of the whole image clamped to the
// ratio range (at least 1x1). Each try draws two UniformDouble, an accepted
// one two UniformInt (y, then x). InvalidArgument unless height, width > 0,
// 0 < scale[0] <= scale[1] and 0 < ratio[0] <= ratio[1].
Result<CropWindow> SampleRandomResizedCrop(int64_t height, int64_t width, Rng& rng,
                                           std::array<double, 2> scale = {0.08, 1.0},
                                           std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0});

struct RandomResizedCropOptions {
  std::array<double, 2> scale = {0.08, 1.0};
  std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0};
  ResizeMethod method = ResizeMethod::kBilinear;
  bool antialias = false;
};
// SampleRandomResizedCrop on the image's size, then Resize of that window to
// `size` (one 3-D image; the crop is not copied first). Output dtype as
// Resize's.
Result<Tensor> RandomResizedCrop(const Tensor& image, ImageSize size, Rng& rng,
                                 const RandomResizedCropOptions& options = {});

// --- Flips and rotations (3-D image or 4-D batch; any numeric dtype) --------

Result<Tensor> FlipLeftRight(const Tensor& image);  // tf.image.flip_left_right
Result<Tensor> FlipUpDown(const Tensor& image);     // tf.image.flip_up_down
Status FlipLeftRightInto(const Tensor& image, Tensor* out);
Status FlipUpDownInto(const Tensor& image, Tensor* out);
// tf.image.random_flip_*: flips with probability 1/2, drawing one
// Rng::UniformFloat per image (flip when < 0.5). For a 3-D image that is not
// flipped, returns the image itself (may share the input's bytes); each
// image of a batch is flipped independently.
Result<Tensor> RandomFlipLeftRight(const Tensor& image, Rng& rng);
Result<Tensor> RandomFlipUpDown(const Tensor& image, Rng& rng);
// The draw of every random flip (RandomFlip*, Mirror::kRandom): true (flip)
// with probability 1/2.
inline bool SampleFlip(Rng& rng) { return rng.UniformFloat() < 0.5f; }
// The same, flipping a 3-D image in place when nothing else shares its
// bytes (`image = RandomFlipLeftRight(std::move(image), rng)`): no new
// buffer, and the bytes stay in cache. Same result.
Result<Tensor> RandomFlipLeftRight(Tensor&& image, Rng& rng);
Result<Tensor> RandomFlipUpDown(Tensor&& image, Rng& rng);
// tf.image.rot90: rotates counter-clockwise by k * 90 degrees; k may be any
// integer (taken modulo 4, negative turns clockwise). [H, W, C] becomes
// [W, H, C] for odd k. k % 4 == 0 returns the image itself (may share the
// input's bytes).
Result<Tensor> Rot90(const Tensor& image, int64_t k = 1);

// --- Casts and dtype conversion (any rank, numeric dtypes) ------------------

// tf.cast. Float to integer truncates toward zero. Out-of-range and NaN
// inputs (C++ undefined behaviour, defined here) give what TensorFlow's CPU
// kernel gives on x86-64: int32 and int64 get their minimum value (x86's
// "integer indefinite"); uint8 gets that int32 result clamped to [0, 255]
// (so 300.0 -> 255, -1.0 -> 0, NaN -> 0, 3e9 -> 0). TF itself wraps instead
// (300.0 -> 44) for the few elements its vectorized loop leaves to scalar
// code; sluice treats every element alike. Integer to narrower integer
// wraps (two's complement); to bool is x != 0 (NaN -> true). To float16 or
// bfloat16 rounds to nearest even (from float64 through float32, as TF),
// overflow to infinity. Same dtype returns the input itself (may share its
// bytes).
Result<Tensor> Cast(const Tensor& x, DType dtype);
// As Cast, into `*out` (its dtype is the target).
Status CastInto(const Tensor& x, Tensor* out);
// tf.dtypes.saturate_cast: clamps to the target's range first (NaN -> 0 for
// integers). Clamps to the exact limits (TF's float->int32 saturates at
// 2147483520, the largest float below 2^31; sluice gives 2147483647).
Result<Tensor> SaturateCast(const Tensor& x, DType dtype);

// tf.image.convert_image_dtype: integer images span [0, MAX], float images
// [0, 1]. int -> float: cast, then times 1/MAX (in the target type);
// float -> int: times (MAX + 0.5), then cast (truncating; out-of-range as
// Cast) or, with `saturate`, SaturateCast; int -> int: shifts by the ratio of
// (MAX + 1)s (floor division when narrowing); float -> float: cast. bool is
// InvalidArgument (TF: neither float nor integer). Same dtype returns the
// input itself.
Result<Tensor> ConvertImageDtype(const Tensor& image, DType dtype, bool saturate = false);

// --- Normalization (output float32) ----------------------------------------

// (x - mean[c]) / stddev[c] per channel (the last dimension), in float32,
// for a tensor of rank >= 1 and any numeric dtype. Values are used as they
// are: for uint8 pass means in 0..255 (e.g. 123.675, 116.28, 103.53) or
// ConvertImageDtype first. mean and stddev hold one value per channel, or
// one for all; stddev must be finite and non-zero.
Result<Tensor> Normalize(const Tensor& image, std::span<const float> mean,
                         std::span<const float> stddev);
inline Result<Tensor> Normalize(const Tensor& image, std::initializer_list<float> mean,
                                std::initializer_list<float> stddev) {
  return Normalize(image, std::span<const float>(mean.begin(), mean.size()),
                   std::span<const float>(stddev.begin(), stddev.size()));
}
Status NormalizeInto(const Tensor& image, std::span<const float> mean,
                     std::span<const float> stddev, Tensor* out);
// The same, in place when `image` is float32 and nothing else shares its
// bytes (`image = Normalize(std::move(image), mean, stddev)`). Same result.
Result<Tensor> Normalize(Tensor&& image, std::span<const float> mean,
                         std::span<const float> stddev);
inline Result<Tensor> Normalize(Tensor&& image, std::initializer_list<float> mean,
                                std::initializer_list<float> stddev) {
  return Normalize(std::move(image), std::span<const float>(mean.begin(), mean.size()),
                   std::span<const float>(stddev.begin(), stddev.size()));
}

// tf.image.per_image_standardization: for each image (the last three
// dimensions; rank >= 3), (x - mean) / max(stddev, 1 / sqrt(N)) with N its
// element count. Mean and variance are accumulated in double (TF: float32
// reductions), then used in float32 as TF does.
Result<Tensor> PerImageStandardization(const Tensor& image);

}  // namespace sluice::ops

#endif  // SLUICE_OPS_IMAGE_OPS_H_
