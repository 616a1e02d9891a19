// DecodeRandomResizedCropBatch: the ImageNet training recipe on the device.
// A batch of JPEGs is decoded by a JpegDecoder (nvJPEG, CPU fallback), then
// each image is cropped to a random-resized-crop window, resized
// bilinearly, maybe mirrored, stacked into one float32 batch and
// normalized, with the GPU twins of image_ops.h, so the batch reaches
// training without returning to the host:
//
//   SLUICE_ASSIGN_OR_RETURN(gpu::DeviceTensor x,            // float32 [N, 224, 224, 3]
//       gpu::DecodeRandomResizedCropBatch(*decoder, jpegs, rng, options));
//
// For each image in order the rng draws the window
// (ops::SampleRandomResizedCrop on the decoded size), then, with
// Mirror::kRandom, one UniformFloat for the flip: the draws of
// ops::DecodeRandomCropResize with fused = false. With the same pixels the
// result equals that op's row by row (the twins are bit-exact; on the host
// device the decode is libjpeg-turbo's, so the whole batch is). GPU-decoded
// pixels differ from the CPU's by nvJPEG's few levels (docs/gpu.md).
//
// Ownership: as JpegDecoder::Decode; the batch is the caller's, allocated
// for the decoder's stream. Thread-safety: as the decoder (one thread at a
// time); the Rng must not be shared.
#ifndef SLUICE_GPU_JPEG_AUGMENT_H_
#define SLUICE_GPU_JPEG_AUGMENT_H_

#include <array>
#include <span>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/rng.h"
#include "sluice/gpu/device_tensor.h"
#include "sluice/gpu/jpeg_decoder.h"
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
};

// float32 [images.size(), size.height, size.width, 3] on the decoder's
// stream. The first image's error (decode, or bad options) if any; nothing
// of the batch is returned then. InvalidArgument for an empty batch.
Result<DeviceTensor> DecodeRandomResizedCropBatch(JpegDecoder& decoder,
                                                  std::span<const EncodedJpeg> images, Rng& rng,
                                                  const JpegAugmentOptions& options = {});

// The same after the decode: `decoded` are uint8 [h, w, 3] images on
// `stream`'s device (JpegDecoder's results), each allocated for `stream` or
// kept alive by the caller until the stream has passed this work.
Result<DeviceTensor> RandomResizedCropBatch(std::span<const DeviceTensor> decoded, Rng& rng,
                                            Stream& stream, const JpegAugmentOptions& options = {});

}  // namespace sluice::gpu

#endif  // SLUICE_GPU_JPEG_AUGMENT_H_
