// DecodeRandomResizedCropBatch: the ImageNet training recipe on the device.
// A batch of JPEGs is decoded by a JpegDecoder (nvJPEG, CPU fallback), then
// each image is cropped to a random-resized-crop window, resized
// bilinearly, maybe mirrored and normalized, straight into one float32
// batch, so the batch reaches training without returning to the host:
//
//   SLUICE_ASSIGN_OR_RETURN(DeviceTensor x,            // float32 [N, 224, 224, 3]
//       gpu::DecodeRandomResizedCropBatch(*decoder, jpegs, rng, options));
//
// The crop, resize, flip and normalize are one fused kernel launch per
// batch (up to 256 images a launch; their windows travel as the kernel's
// arguments): no per-image launches, no intermediate tensors. Its
// arithmetic is that of image_ops.h's Crop, Resize (bilinear), FlipLeftRight
// and Normalize twins, step for step, so the bytes equal that chain's.
//
// For each image in order the rng draws the window
// (ops::SampleRandomResizedCrop on the decoded size), then, with
// Mirror::kRandom, one UniformFloat for the flip: the draws of
// ops::DecodeRandomCropResize with fused = false. With the same pixels the
// result equals that op's row by row (the twins are bit-exact; on the host
// device the decode is libjpeg-turbo's, so the whole batch is). GPU-decoded
// pixels differ from the CPU's by nvJPEG's few levels (docs/gpu.md).
//
// Overlap: given an `augment_stream`, the decode is queued on the decoder's
// stream and the augmentation on `augment_stream` after it (an event), so
// the next batch's decode (the GPU's JPEG engines) runs while this batch
// is augmented, and the calling thread does not wait for either:
//
//   auto decoder = gpu::JpegDecoder::Create(*decode_stream).value();
//   for (...) {
//     x = gpu::DecodeRandomResizedCropBatch(*decoder, jpegs, rng, options, augment_stream.get());
//     ... queue work reading x on augment_stream (or wait for an event recorded there) ...
//   }
//
// Ownership: as JpegDecoder::Decode; the batch is the caller's, allocated
// for the stream the augmentation ran on (the decoder's, or augment_stream).
// The decoded images are released by the call; with augment_stream their
// memory returns to the allocator only once augment_stream has read them
// (DeviceTensor::RecordUse). Thread-safety: as the decoder (one thread at a
// time); the Rng must not be shared.
#ifndef SLUICE_OPS_CUDA_JPEG_AUGMENT_H_
#define SLUICE_OPS_CUDA_JPEG_AUGMENT_H_

#include <array>
#include <span>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/rng.h"
#include "sluice/device/device_memory.h"
#include "sluice/ops/cuda/jpeg_decoder.h"
#include "sluice/ops/decode_crop_resize.h"
#include "sluice/ops/resize.h"

namespace sluice::gpu {

struct JpegAugmentOptions {
  ops::ImageSize size = {224, 224};                      // output height, width
  std::array<double, 2> scale = {0.08, 1.0};             // of the image's area
  std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0};  // width / height
  ops::Mirror mirror = ops::Mirror::kRandom;
  // Per-channel (or one) mean and stddev; both empty: not normalized.
  std::vector<float> mean, stddev;
  // The batch's type: kFloat32, or kBFloat16 (the float32 values rounded
  // to nearest even, as Cast does; half the bytes to write and to read).
  DType dtype = DType::kFloat32;
};

// options.dtype [images.size(), size.height, size.width, 3] on the decoder's
// stream, or on `augment_stream` (a stream of the decoder's device) when
// given. The first image's error (decode, or bad options) if any; nothing
// of the batch is returned then. InvalidArgument for an empty batch, for
// mean/stddev of other than 1 or 3 values, for a zero or non-finite stddev,
// for a dtype other than float32 and bfloat16.
Result<DeviceTensor> DecodeRandomResizedCropBatch(JpegDecoder& decoder,
                                                  std::span<const EncodedJpeg> images, Rng& rng,
                                                  const JpegAugmentOptions& options = {},
                                                  Stream* augment_stream = nullptr);

// The same after the decode: `decoded` are uint8 [h, w, 3] images on
// `stream`'s device (JpegDecoder's results), each allocated for `stream` or
// kept alive by the caller until the stream has passed this work.
Result<DeviceTensor> RandomResizedCropBatch(std::span<const DeviceTensor> decoded, Rng& rng,
                                            Stream& stream, const JpegAugmentOptions& options = {});

// The same on `stream` after the work queued so far on `producer` (the
// stream that wrote `decoded`, e.g. the decoder's): `stream` waits for an
// event of `producer`, neither thread nor producer waits, and each decoded
// image is marked as used by `stream` (DeviceTensor::RecordUse), so the
// caller may drop the images at once. Both streams on one device.
Result<DeviceTensor> RandomResizedCropBatchAfter(std::span<const DeviceTensor> decoded, Rng& rng,
                                                 Stream& producer, Stream& stream,
                                                 const JpegAugmentOptions& options = {});

}  // namespace sluice::gpu

#endif  // SLUICE_OPS_CUDA_JPEG_AUGMENT_H_
