// DecodeJpegBatchesToDevice: the last stage of an input pipeline that
// trains from JPEGs on a GPU, as a Dataset stage. Its input's elements are
// batches of encoded JPEGs (a string component [N], views into the read
// buffers) with other numeric components (labels); each is decoded with a
// JpegDecoder (nvJPEG, CPU fallback), randomly cropped, resized, flipped
// and normalized on the device (jpeg_augment.h), the other components are
// copied to the device, and the stage's element is the batch with its
// Tensors in device memory (Tensor::device()):
//
//   Dataset ds = gpu::DecodeJpegBatchesToDevice(
//       TFRecordDataset(files).map(parse_jpeg_and_label).batch(256).prefetch(2),
//       Device::Gpu(0), {.image = "image", .prefetch = 2});
//   for (const Element& batch : ds) {                 // image: float32 [N, 224, 224, 3]
//     train_step(*batch.find("image"), *batch.find("label"));  // device memory, ready
//   }
//
// A producer task in the pipeline's arena (one at a time, so order is kept)
// pulls the next input batch, does the host part of the decode (headers,
// staging, GPU_HYBRID's and the CPU fallback's work), queues the decode on
// the stage's own decode stream and the augmentation (one fused kernel) and
// the copies on its output stream after it, while fewer than
// max(1, options.prefetch) batches wait for next(). So batch k+1's decode
// (the GPU's JPEG engines) runs while batch k is augmented and consumed.
// next() hands out the oldest once its work on the device is done (a host
// wait on its event, normally complete by then). The augmentation rng of
// batch b (b counts the input's batches) is Rng(seed, b), so a run is
// reproducible whatever the timing. Errors name the stage, the component,
// batch and image ("image of batch 12, image 3"); they arrive in order and
// do not end the stage. With skip_bad_images, images no backend decodes are
// dropped with their rows of the other components (a batch left empty is
// skipped). On cpu:0 (the device runtime's host backend) all of it runs on
// host memory, which is how the stage runs in every build.
//
// Save/restore: each buffered batch keeps its host input element (the
// encoded JPEGs and labels) and its index b until it is handed out, so a
// save writes those (and the count of batches pulled, and the input's state
// after them); a restore decodes them again, with the same crops. What was
// delivered is not delivered again; what was in flight is replayed.
//
// JpegBatchesToDevice / JpegBatchIterator: the same stage read as
// DeviceElements (the interface before the stage), for code that waits on
// a stream rather than on the host.
//
// Ownership: each iterator owns its decoder, its decode stream and (unless
// given) the output stream. The decoded images are freed once the output
// stream has read them (DeviceTensor::RecordUse). Elements handed out stay
// valid after the iterator is destroyed; their tensors are allocated for
// the stage's output stream (see device_tensor.h). Destroying an iterator
// waits for its producer (the batch it is making).
#ifndef SLUICE_PIPELINE_CUDA_JPEG_BATCHES_H_
#define SLUICE_PIPELINE_CUDA_JPEG_BATCHES_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "sluice/core/result.h"
#include "sluice/device/stream.h"
#include "sluice/ops/cuda/jpeg_augment.h"
#include "sluice/ops/cuda/jpeg_decoder.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/iterator.h"
#include "sluice/pipeline/prefetch_to_device.h"

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
  // Batches made ahead by the stage's producer task (tf.data's prefetch;
  // 0 counts as 1): next() then only takes a finished one, and the host part
  // of the decode (headers, staging, nvJPEG's calls) overlaps the caller's
  // work, e.g. a training step that waits for its loss. Each batch ahead
  // holds its device memory; its host input is charged to the RAM budget.
  int prefetch = 0;
  // Where the stage's iterators report what the pipeline's counters do not
  // (decoder_stats(), skipped_images(), stage_times()); null: nowhere. Read
  // it from any thread; meant for one iterator at a time.
  std::shared_ptr<class JpegBatchesStats> stats;
};

// Where the stage's producer spent its time, summed over the batches made: waiting for
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

// What a stage's iterator reports after each batch it made. Thread-safe.
class JpegBatchesStats {
 public:
  // The decoder's counters after the last batch made.
  JpegDecodeStats decoder_stats() const;
  // Images dropped by skip_bad_images so far.
  int64_t skipped_images() const;
  JpegStageTimes stage_times() const;

  // For the stage: adds to the counters.
  void AddInputTime(int64_t ns);
  void AddDecode(const JpegDecodeStats& decoder, int64_t skipped, int64_t ns);
  void AddBatch(int64_t augment_ns);

 private:
  mutable std::mutex mu_;
  JpegDecodeStats decoder_;
  int64_t skipped_ = 0;
  JpegStageTimes times_;
};

// The stage. InvalidArgument (in the Dataset) for bad options or a stream
// of another device; the device runtime's errors for the device; the
// decoder's when an iterator is made.
Dataset DecodeJpegBatchesToDevice(const Dataset& input, const Device& device,
                                  JpegBatchesOptions options = {});

class JpegBatchIterator {
 public:
  JpegBatchIterator(JpegBatchIterator&&) noexcept;
  JpegBatchIterator& operator=(JpegBatchIterator&&) noexcept;
  ~JpegBatchIterator();

  // The next batch: the image component replaced by float32 (or bfloat16)
  // [N', h, w, 3] (N' = N unless skip_bad_images dropped some), the other
  // numeric components copied to the device, names kept. nullopt at the end
  // of the input; the input's and the decode's errors in order (after one,
  // the iterator is finished, as Iterator::next()). Its event is complete.
  Result<std::optional<DeviceElement>> Next();
  // The stage's JpegBatchesStats (the producer may be making more
  // meanwhile). Thread-safe.
  JpegDecodeStats decoder_stats() const;
  int64_t skipped_images() const;
  JpegStageTimes stage_times() const;
  // The stage's iterator (save(), restore(), stats()).
  Iterator& iterator();

 private:
  friend Result<JpegBatchIterator> JpegBatchesToDevice(const Dataset&, const Device&,
                                                       const JpegBatchesOptions&);
  struct State;
  explicit JpegBatchIterator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// DecodeJpegBatchesToDevice(input, device, options).iterator(), read as
// DeviceElements. InvalidArgument for bad options or a stream of another
// device; the decoder's errors.
Result<JpegBatchIterator> JpegBatchesToDevice(const Dataset& input, const Device& device,
                                              const JpegBatchesOptions& options = {});

}  // namespace sluice::gpu

#endif  // SLUICE_PIPELINE_CUDA_JPEG_BATCHES_H_
