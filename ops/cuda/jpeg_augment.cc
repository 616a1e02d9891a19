// DecodeRandomResizedCropBatch (jpeg_augment.h): the windows and flips drawn
// on the host, then one fused crop-resize-flip-normalize launch per batch
// (internal/crop_resize_kernels.cu), optionally on a second stream so the
// decoder's stream moves on to the next batch.
#include "sluice/ops/cuda/jpeg_augment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "sluice/ops/cuda/internal/image_kernels.h"
#include "sluice/device/cuda/launch.h"
#include "sluice/ops/image_ops.h"

namespace sluice::gpu {
namespace {

using gpu_internal::CropResizeBatchArgs;
using gpu_internal::KernelTarget;

Status CheckOptions(const JpegAugmentOptions& o) {
  if (o.size.height <= 0 || o.size.width <= 0) {
    return Status::InvalidArgument("RandomResizedCropBatch: output size must be positive");
  }
  if (o.mean.empty() != o.stddev.empty()) {
    return Status::InvalidArgument("RandomResizedCropBatch: give both mean and stddev, or neither");
  }
  for (const auto* v : {&o.mean, &o.stddev}) {
    if (!v->empty() && v->size() != 1 && v->size() != 3) {
      return Status::InvalidArgument(
          "RandomResizedCropBatch: mean and stddev take 1 or 3 values, got " +
          std::to_string(v->size()));
    }
  }
  if (o.dtype != DType::kFloat32 && o.dtype != DType::kBFloat16) {
    return Status::InvalidArgument(
        "RandomResizedCropBatch: dtype must be float32 or bfloat16, got " +
        std::string(DTypeName(o.dtype)));
  }
  for (float x : o.stddev) {
    if (x == 0.0f || !std::isfinite(x)) {
      return Status::InvalidArgument(
          "RandomResizedCropBatch: stddev values must be finite and non-zero, got " +
          std::to_string(x));
    }
  }
  return Status::OK();
}

}  // namespace

Result<DeviceTensor> RandomResizedCropBatch(std::span<const DeviceTensor> decoded, Rng& rng,
                                            Stream& stream, const JpegAugmentOptions& options) {
  if (decoded.empty()) return Status::InvalidArgument("RandomResizedCropBatch: empty batch");
  SLUICE_RETURN_IF_ERROR(CheckOptions(options));
  const int64_t n = static_cast<int64_t>(decoded.size());
  const int64_t h = options.size.height, w = options.size.width;
  // The arguments of every launch, drawn and checked before any is queued.
  const int64_t launches =
      (n + gpu_internal::kMaxCropResizeImages - 1) / gpu_internal::kMaxCropResizeImages;
  auto args = std::make_unique<CropResizeBatchArgs[]>(static_cast<size_t>(launches));
  for (int64_t i = 0; i < n; ++i) {
    const DeviceTensor& image = decoded[static_cast<size_t>(i)];
    if (image.shape().rank() != 3 || image.shape().dim(2) != 3 || image.dtype() != DType::kUInt8) {
      return Status::InvalidArgument("RandomResizedCropBatch: image " + std::to_string(i) + " is " +
                                     image.DebugString() + ", not uint8 [h, w, 3]");
    }
    if (!(image.device() == stream.device())) {
      return Status::InvalidArgument("RandomResizedCropBatch: image " + std::to_string(i) +
                                     " is on " + image.device().ToString() + ", the stream on " +
                                     stream.device().ToString());
    }
    const int64_t ih = image.shape().dim(0), iw = image.shape().dim(1);
    if (iw > std::numeric_limits<int32_t>::max() || ih > std::numeric_limits<int32_t>::max()) {
      return Status::InvalidArgument("RandomResizedCropBatch: image " + std::to_string(i) +
                                     " is too large: " + image.DebugString());
    }
    SLUICE_ASSIGN_OR_RETURN(ops::CropWindow window, ops::SampleRandomResizedCrop(
                                                        ih, iw, rng, options.scale, options.ratio));
    bool flip = options.mirror == ops::Mirror::kAlways;
    if (options.mirror == ops::Mirror::kRandom) flip = ops::SampleFlip(rng);
    CropResizeBatchArgs& a = args[static_cast<size_t>(i / gpu_internal::kMaxCropResizeImages)];
    gpu_internal::CropResizeImage& m = a.image[i % gpu_internal::kMaxCropResizeImages];
    m.in = static_cast<const uint8_t*>(image.raw_data());
    m.width = static_cast<int32_t>(iw);
    m.y0 = static_cast<int32_t>(window.y);
    m.x0 = static_cast<int32_t>(window.x);
    m.crop_height = static_cast<int32_t>(window.height);
    m.crop_width = static_cast<int32_t>(window.width);
    // gpu::Resize's scales (a window of the output size is copied exactly
    // by these taps, as its cast shortcut does).
    m.scale_y = static_cast<float>(window.height) / static_cast<float>(h);
    m.scale_x = static_cast<float>(window.width) / static_cast<float>(w);
    m.flip = flip ? 1 : 0;
  }
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor batch, AllocateDeviceTensor(stream.device(), options.dtype,
                                                                   Shape({n, h, w, 3}), &stream));
  for (int64_t l = 0; l < launches; ++l) {
    CropResizeBatchArgs& a = args[static_cast<size_t>(l)];
    a.out = batch.raw_data();
    a.bf16 = options.dtype == DType::kBFloat16;
    a.first = l * gpu_internal::kMaxCropResizeImages;
    a.count = std::min(gpu_internal::kMaxCropResizeImages, n - a.first);
    a.out_height = h;
    a.out_width = w;
    a.normalize = !options.mean.empty();
    for (size_t c = 0; c < 3 && a.normalize; ++c) {
      a.mean[c] = options.mean[options.mean.size() == 1 ? 0 : c];
      a.stddev[c] = options.stddev[options.stddev.size() == 1 ? 0 : c];
    }
    // The host device runs the loop later: it holds its own copy (~10 KB).
    auto held = std::make_shared<const CropResizeBatchArgs>(a);
    SLUICE_RETURN_IF_ERROR(gpu_internal::Enqueue(
        stream, "RandomResizedCropBatch kernel",
        [held](KernelTarget t) { return gpu_internal::RunCropResizeBatch(*held, t); }));
  }
  return batch;
}

Result<DeviceTensor> DecodeRandomResizedCropBatch(JpegDecoder& decoder,
                                                  std::span<const EncodedJpeg> images, Rng& rng,
                                                  const JpegAugmentOptions& options,
                                                  Stream* augment_stream) {
  if (images.empty()) {
    return Status::InvalidArgument("DecodeRandomResizedCropBatch: empty batch");
  }
  Stream& decode_stream = decoder.stream();
  if (augment_stream != nullptr && !(augment_stream->device() == decode_stream.device())) {
    return Status::InvalidArgument("DecodeRandomResizedCropBatch: the augment stream is on " +
                                   augment_stream->device().ToString() + ", the decoder on " +
                                   decode_stream.device().ToString());
  }
  SLUICE_RETURN_IF_ERROR(CheckOptions(options));
  SLUICE_ASSIGN_OR_RETURN(std::vector<DeviceTensor> decoded, decoder.Decode(images));
  if (augment_stream == nullptr || augment_stream == &decode_stream) {
    return RandomResizedCropBatch(decoded, rng, decode_stream, options);
  }
  return RandomResizedCropBatchAfter(decoded, rng, decode_stream, *augment_stream, options);
}

Result<DeviceTensor> RandomResizedCropBatchAfter(std::span<const DeviceTensor> decoded, Rng& rng,
                                                 Stream& producer, Stream& stream,
                                                 const JpegAugmentOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> decoded_event, NewEvent(producer.device()));
  SLUICE_RETURN_IF_ERROR(producer.Record(*decoded_event));
  SLUICE_RETURN_IF_ERROR(stream.WaitFor(*decoded_event));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor batch,
                          RandomResizedCropBatch(decoded, rng, stream, options));
  // The decoded images' memory goes back (to the producer's stream) only
  // once this stream has read them.
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> read, NewEvent(stream.device()));
  SLUICE_RETURN_IF_ERROR(stream.Record(*read));
  std::shared_ptr<Event> shared(std::move(read));
  for (const DeviceTensor& d : decoded) RecordUse(d, shared);
  return batch;
}

}  // namespace sluice::gpu
