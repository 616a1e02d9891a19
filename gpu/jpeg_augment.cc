// DecodeRandomResizedCropBatch (jpeg_augment.h): the decoder's images
// cropped, resized, mirrored and stacked with image_ops.h's twins, one
// image at a time, then normalized as one batch.
#include "sluice/gpu/jpeg_augment.h"

#include <string>
#include <utility>

#include "sluice/gpu/image_ops.h"
#include "sluice/ops/image_ops.h"

namespace sluice::gpu {

Result<DeviceTensor> RandomResizedCropBatch(std::span<const DeviceTensor> decoded, Rng& rng,
                                            Stream& stream, const JpegAugmentOptions& options) {
  if (decoded.empty()) return Status::InvalidArgument("RandomResizedCropBatch: empty batch");
  if (options.size.height <= 0 || options.size.width <= 0) {
    return Status::InvalidArgument("RandomResizedCropBatch: output size must be positive");
  }
  if (options.mean.empty() != options.stddev.empty()) {
    return Status::InvalidArgument("RandomResizedCropBatch: give both mean and stddev, or neither");
  }
  const int64_t n = static_cast<int64_t>(decoded.size());
  const int64_t h = options.size.height, w = options.size.width;
  SLUICE_ASSIGN_OR_RETURN(
      DeviceTensor batch,
      DeviceTensor::Allocate(stream.device(), DType::kFloat32, Shape({n, h, w, 3}), &stream));
  const size_t row_bytes = static_cast<size_t>(h * w * 3) * sizeof(float);
  for (int64_t i = 0; i < n; ++i) {
    const DeviceTensor& image = decoded[static_cast<size_t>(i)];
    if (image.shape().rank() != 3 || image.shape().dim(2) != 3) {
      return Status::InvalidArgument("RandomResizedCropBatch: image " + std::to_string(i) + " is " +
                                     image.DebugString() + ", not [h, w, 3]");
    }
    SLUICE_ASSIGN_OR_RETURN(ops::CropWindow window,
                            ops::SampleRandomResizedCrop(image.shape().dim(0), image.shape().dim(1),
                                                         rng, options.scale, options.ratio));
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor x, Crop(image, window, stream));
    SLUICE_ASSIGN_OR_RETURN(x, Resize(x, options.size, stream));
    if (options.mirror == ops::Mirror::kRandom) {
      SLUICE_ASSIGN_OR_RETURN(x, RandomFlipLeftRight(x, rng, stream));
    } else if (options.mirror == ops::Mirror::kAlways) {
      SLUICE_ASSIGN_OR_RETURN(x, FlipLeftRight(x, stream));
    }
    if (x.byte_size() != row_bytes || x.dtype() != DType::kFloat32) {
      return Status::Internal("RandomResizedCropBatch: resized image " + x.DebugString() +
                              " does not fit a batch row");
    }
    SLUICE_RETURN_IF_ERROR(stream.CopyAsync(static_cast<char*>(batch.data()) + i * row_bytes,
                                            x.data(), row_bytes, CopyDirection::kDeviceToDevice));
  }
  if (options.mean.empty()) return batch;
  return Normalize(batch, options.mean, options.stddev, stream);
}

Result<DeviceTensor> DecodeRandomResizedCropBatch(JpegDecoder& decoder,
                                                  std::span<const EncodedJpeg> images, Rng& rng,
                                                  const JpegAugmentOptions& options) {
  if (images.empty()) {
    return Status::InvalidArgument("DecodeRandomResizedCropBatch: empty batch");
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<DeviceTensor> decoded, decoder.Decode(images));
  return RandomResizedCropBatch(decoded, rng, decoder.stream(), options);
}

}  // namespace sluice::gpu
