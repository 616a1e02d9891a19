// GPU twins of the image kernels of ops/ (crop, flips, resize, normalize,
// cast) on DeviceTensors, so a pipeline can decode on the CPU and augment on
// the device:
//
//   SLUICE_ASSIGN_OR_RETURN(auto batch, it.Next());              // prefetch_to_device
//   SLUICE_RETURN_IF_ERROR(batch->WaitOn(stream));
//   const DeviceTensor& images = (*batch)[0];               // uint8 [N, 256, 256, 3]
//   SLUICE_ASSIGN_OR_RETURN(auto x, gpu::Crop(images, {16, 16, 224, 224}, stream));
//   SLUICE_ASSIGN_OR_RETURN(x, gpu::RandomFlipLeftRight(x, rng, stream));
//   SLUICE_ASSIGN_OR_RETURN(x, gpu::Normalize(x, {123.675f, 116.28f, 103.53f},
//                                             {58.395f, 57.12f, 57.375f}, stream));
//
// Each op has the semantics, dtypes, shapes and error messages of its ops/
// namesake and the same results, bit for bit (tests/gpu/image_ops_test.cc
// compares them): the element arithmetic is one __host__ __device__
// function per op, rounding each step as the CPU kernels do. Ops queue
// their work on `stream` and return at once; the result is a new tensor
// allocated on the stream's device for that stream, valid for work queued
// after the call. Argument errors come back before anything is queued. On
// the host device ("cpu:0") the same loops run on the stream's worker.
//
// As in ops/, each op also has an *Into form that writes into a tensor the
// caller allocated (DALI's Setup/Run split; the shape is ops/' *OutputShape
// or, for a crop, the window's): InvalidArgument unless `out` is on the
// stream's device with exactly the output's dtype and shape. REQUIRES: out
// does not overlap the input. Into forms always write (Cast and a resize to
// the same size copy where the allocating forms may return the input).
//
// Ownership and lifetime: the result is the caller's. An input must stay
// allocated until the stream has run the op: a tensor allocated for the
// same stream may be dropped at once (its memory is reused only by later
// work of that stream); one allocated for another stream (e.g. a
// prefetch_to_device batch) must be kept until the stream has passed the
// op (record an event). Thread-safety: ops may be called from any thread;
// an Rng must not be shared between threads.
#ifndef SLUICE_OPS_CUDA_IMAGE_OPS_H_
#define SLUICE_OPS_CUDA_IMAGE_OPS_H_

#include <initializer_list>
#include <span>

#include "sluice/core/dtype.h"
#include "sluice/core/result.h"
#include "sluice/core/rng.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/stream.h"
#include "sluice/ops/image_ops.h"
#include "sluice/ops/resize.h"

namespace sluice::gpu {

// ops::Crop: the window of a [H, W, C] image or of each image of a
// [N, H, W, C] batch; any numeric dtype.
Result<DeviceTensor> Crop(const DeviceTensor& image, const ops::CropWindow& window, Stream& stream);

// ops::FlipLeftRight / FlipUpDown, any numeric dtype, 3-D or 4-D.
Result<DeviceTensor> FlipLeftRight(const DeviceTensor& image, Stream& stream);
Result<DeviceTensor> FlipUpDown(const DeviceTensor& image, Stream& stream);

// ops::RandomFlipLeftRight / RandomFlipUpDown: one rng.UniformFloat() per
// image in batch order (flip when < 0.5), so the same Rng state gives the
// CPU op's result. A 3-D image that is not flipped is returned itself.
Result<DeviceTensor> RandomFlipLeftRight(const DeviceTensor& image, Rng& rng, Stream& stream);
Result<DeviceTensor> RandomFlipUpDown(const DeviceTensor& image, Rng& rng, Stream& stream);

// ops::Resize with method kBilinear (float32 output) or kNearest (the
// input's dtype), half-pixel centers as TF 2, preserve_aspect_ratio
// honoured. Other methods and antialias are InvalidArgument on devices (use
// ops::Resize on the host).
Result<DeviceTensor> Resize(const DeviceTensor& image, ops::ImageSize size, Stream& stream,
                            const ops::ResizeOptions& options = {});

// ops::Normalize: (x - mean[c]) / stddev[c] in float32 over the last
// dimension. At most 64 per-channel values (InvalidArgument beyond).
Result<DeviceTensor> Normalize(const DeviceTensor& image, std::span<const float> mean,
                               std::span<const float> stddev, Stream& stream);
inline Result<DeviceTensor> Normalize(const DeviceTensor& image, std::initializer_list<float> mean,
                                      std::initializer_list<float> stddev, Stream& stream) {
  return Normalize(image, std::span<const float>(mean.begin(), mean.size()),
                   std::span<const float>(stddev.begin(), stddev.size()), stream);
}

// ops::Cast between any two numeric dtypes, with its results (x86-64's for
// out-of-range floats, wrapping integers, round-to-nearest-even float16 and
// bfloat16). The same dtype returns `x` itself.
Result<DeviceTensor> Cast(const DeviceTensor& x, DType dtype, Stream& stream);

// The *Into forms (see the top of this file). CastInto's target dtype is
// out's; ResizeInto's size is out's height and width.
Status CropInto(const DeviceTensor& image, const ops::CropWindow& window, DeviceTensor* out,
                Stream& stream);
Status FlipLeftRightInto(const DeviceTensor& image, DeviceTensor* out, Stream& stream);
Status FlipUpDownInto(const DeviceTensor& image, DeviceTensor* out, Stream& stream);
Status ResizeInto(const DeviceTensor& image, DeviceTensor* out, Stream& stream,
                  const ops::ResizeOptions& options = {});
Status NormalizeInto(const DeviceTensor& image, std::span<const float> mean,
                     std::span<const float> stddev, DeviceTensor* out, Stream& stream);
Status CastInto(const DeviceTensor& x, DeviceTensor* out, Stream& stream);

}  // namespace sluice::gpu

#endif  // SLUICE_OPS_CUDA_IMAGE_OPS_H_
