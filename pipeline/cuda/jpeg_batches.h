// JpegBatchesToDevice: the last stage of an input pipeline that trains from
// JPEGs on a GPU. It pulls batches of encoded JPEGs from a pipeline (a
// string component [N], views into the read buffers), decodes them with a
// JpegDecoder (nvJPEG, CPU fallback), applies the random-resized crop, flip
// and normalize of jpeg_augment.h on the device, copies the other
// components (labels) to the device, and hands out one DeviceElement per
// batch with the event that completes when all of it has been written:
//
//   auto ds = sluice::TFRecordDataset(files).map(parse_jpeg_and_label).batch(256).prefetch(2);
//   SLUICE_ASSIGN_OR_RETURN(gpu::JpegBatchIterator it,
//                           gpu::JpegBatchesToDevice(ds, Device::Gpu(0), {.image = "image"}));
//   while (true) {
//     SLUICE_ASSIGN_OR_RETURN(std::optional<gpu::DeviceElement> batch, it.Next());
//     if (!batch) break;
//     SLUICE_RETURN_IF_ERROR(batch->WaitOn(*compute_stream));
//     train_step(*batch->find("image"), *batch->find("label"), *compute_stream);  // float32
//     [N,224,224,3]
//   }
//
// With options.prefetch = 0, Next() runs on the calling thread: it pulls the next batch (the
// upstream prefetch overlaps reading and parsing), does the host part of the decode (headers,
// staging, GPU_HYBRID's and the CPU fallback's work), queues the decode on the stage's own decode
// stream and the augmentation (one fused kernel, jpeg_augment.h) and copies on the stage's output
// stream after it, returning without waiting for the GPU. So batch k+1's decode (the GPU's JPEG
// engines) runs while batch k is augmented and consumed; the thread waits only where the decoder
// must (batch k+1-N's decode done before batch k+1's nvJPEG call reuses its state; N =
// options.decoder.nvjpeg_states, 1 by default).
// The augmentation rng of batch b is Rng(seed, b), so a run is reproducible
// whatever the timing. Errors name the component, batch and image
// ("image of batch 12, image 3"); with skip_bad_images, images no backend
// decodes are dropped with their rows of the other components (a batch
// left empty is skipped).
//
// With prefetch > 0, a thread of the stage's own does all of that, up to
// `prefetch` batches ahead, and Next() hands them out in order (an error,
// or the end, after the batches before it).
//
// Ownership: the iterator owns the input iterator, the decoder, its decode
// stream and (unless given) the output stream. The decoded images are freed
// once the output stream has read them (DeviceTensor::RecordUse). Elements handed out stay valid
// after it is destroyed; their tensors are allocated for the stage's stream (see device_tensor.h).
// Thread-safety: Next() is for one thread at a time; destroying the
// iterator stops its prefetch thread (after the batch it is making).
#ifndef SLUICE_PIPELINE_CUDA_JPEG_BATCHES_H_
#define SLUICE_PIPELINE_CUDA_JPEG_BATCHES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sluice/core/result.h"
#include "sluice/ops/cuda/jpeg_augment.h"
#include "sluice/ops/cuda/jpeg_decoder.h"
#include "sluice/pipeline/prefetch_to_device.h"
#include "sluice/device/stream.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::gpu {

struct JpegBatchesOptions {
  // The component holding the encoded JPEGs: a string tensor [N].
  std::string image = "image";
  JpegDecoderOptions decoder;
  JpegAugmentOptions augment;
  uint64_t seed = 0;
  bool skip_bad_images = false;
  // The output stream (augmentation, copies, the elements' events; the
  // decode has a stream of its own). Null: the stage makes its own. A given
  // stream is borrowed (it must outlive the iterator) and must be on the
  // device.
  Stream* stream = nullptr;
  // Batches made ahead on a thread of the stage's own (tf.data's
  // prefetch): Next() then only takes a finished one, and the host part of
  // the decode (headers, staging, nvJPEG's calls) overlaps the caller's
  // work, e.g. a training step that waits for its loss. 0: Next() does that
  // work on the calling thread. Each batch ahead holds its device memory.
  int prefetch = 0;
};

// Where the thread that makes the batches (the caller's, or the stage's own
// with prefetch) spent its time, summed over the batches made: waiting for
// the input's next batch (reading, parsing, batching upstream, less what
// its prefetch hid), in the decoder (the host part of the decode, and
// waiting for a decode state to come free), and queueing the augmentation
// and the other components' copies. Wall time, nanoseconds.
struct JpegStageTimes {
  int64_t batches = 0;
  int64_t input_ns = 0;
  int64_t decode_ns = 0;
  int64_t augment_ns = 0;
};

class JpegBatchIterator {
 public:
  JpegBatchIterator(JpegBatchIterator&&) noexcept;
  JpegBatchIterator& operator=(JpegBatchIterator&&) noexcept;
  ~JpegBatchIterator();

  // The next batch: the image component replaced by float32 [N', h, w, 3]
  // (N' = N unless skip_bad_images dropped some), the other numeric
  // components copied to the device, names kept. nullopt at the end of the
  // input; the input's and the decode's errors in order.
  Result<std::optional<DeviceElement>> Next();
  // The decoder's counters after the last batch made (with prefetch, the
  // stage's thread may be making more meanwhile). Thread-safe.
  JpegDecodeStats decoder_stats() const;
  // Images dropped by skip_bad_images so far. Thread-safe.
  int64_t skipped_images() const;
  // The stage's times after the last batch made. Thread-safe.
  JpegStageTimes stage_times() const;

 private:
  friend Result<JpegBatchIterator> JpegBatchesToDevice(const Dataset&, const Device&,
                                                       const JpegBatchesOptions&);
  struct State;
  explicit JpegBatchIterator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// InvalidArgument for bad options or a stream of another device;
// the decoder's and the input's errors.
Result<JpegBatchIterator> JpegBatchesToDevice(const Dataset& input, const Device& device,
                                              const JpegBatchesOptions& options = {});

}  // namespace sluice::gpu

#endif  // SLUICE_PIPELINE_CUDA_JPEG_BATCHES_H_
