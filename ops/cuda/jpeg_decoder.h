// JpegDecoder: decodes batches of JPEGs into device memory, on the GPU with
// nvJPEG where it can and on the CPU (ops/ libjpeg-turbo) for the rest:
//
//   SLUICE_ASSIGN_OR_RETURN(auto decoder, gpu::JpegDecoder::Create(*stream));
//   std::vector<gpu::EncodedJpeg> jpegs = ...;   // views into the read buffers
//   SLUICE_ASSIGN_OR_RETURN(std::vector<DeviceTensor> images, decoder->Decode(jpegs));
//   // images[i]: uint8 [height_i, width_i, 3] (RGB) on the stream's device
//
// Each image goes to one backend, chosen from its header (docs/gpu.md, "JPEG
// decode"):
//   - kHardware: the GPU's JPEG engines (A100, H100: NVJPEG_BACKEND_HARDWARE)
//     for baseline Huffman images nvjpegDecodeBatchedSupported accepts;
//   - kGpuHybrid: NVJPEG_BACKEND_GPU_HYBRID for the other baseline images
//     (or all of them when the GPU has no engines);
//   - kCpu: ops::DecodeJpeg for what nvJPEG is not given (progressive,
//     arithmetic-coded, CMYK/YCCK/RGB-coded, unusual sampling, larger than
//     max_pixels, an unreadable header). One bad image fails its whole
//     batched call: the images of a failed hardware call get a GPU_HYBRID
//     call of their own, those of a failed GPU_HYBRID call go to the CPU.
// Bitstreams are copied once, into pinned staging memory, and decoded from
// there; CPU-decoded images are decoded into pinned memory and copied to the
// device. nvJPEG's IDCT and chroma upsampling are not libjpeg-turbo's: GPU
// pixels differ from ops::DecodeJpeg's by a few levels (docs/gpu.md has the
// measured difference). On the host device ("cpu:0") the GPU backends are
// stood in for by libjpeg-turbo, so the routing, batching, staging and
// fallback run (and are tested) without a GPU.
//
// Errors: an image that fails on every backend it was given gets the CPU
// decoder's error, which names the image by EncodedJpeg::name as
// ops::DecodeJpeg does (InvalidArgument for corrupt data, ResourceExhausted
// beyond max_pixels). DecodeEach returns one result per image, so a caller
// can skip bad ones (ignore_errors); Decode fails on the first.
//
// Ownership: the bytes of each EncodedJpeg are read only during the call
// (they are copied into staging memory before it returns). The returned
// tensors are the caller's, allocated for the decoder's stream: valid for
// work queued on that stream after the call (see DeviceTensor for other
// streams). The decoder keeps a reference to the stream, which must outlive
// it. Thread-safety: a JpegDecoder is used by one thread at a time (it owns
// nvJPEG states); use one decoder per thread. Create and
// NvjpegAvailability may be called from any thread.
#ifndef SLUICE_OPS_CUDA_JPEG_DECODER_H_
#define SLUICE_OPS_CUDA_JPEG_DECODER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/device/device_memory.h"
#include "sluice/device/stream.h"
#include "sluice/ops/jpeg.h"

namespace sluice::gpu {

enum class JpegBackend : uint8_t { kHardware, kGpuHybrid, kCpu };
// "hardware", "gpu_hybrid", "cpu".
std::string_view JpegBackendName(JpegBackend backend);

struct EncodedJpeg {
  std::string_view bytes;  // the whole JPEG file
  std::string_view name;   // for error messages: a file name, "shard-3.tfrecord record 17"
};

struct JpegDecoderOptions {
  // Use the GPU's JPEG engines where it has them and they take the image.
  bool use_hardware = true;
  // Use NVJPEG_BACKEND_GPU_HYBRID for baseline images the engines do not
  // take; false sends those to the CPU.
  bool use_gpu_hybrid = true;
  // false: every image on the CPU (the reference path, e.g. for comparison).
  bool use_gpu = true;
  // Most images per nvJPEG batched call (1..4096); larger inputs are split.
  int max_batch = 256;
  // Threads for nvJPEG's host part of GPU_HYBRID (nvjpegDecodeBatchedInitialize).
  int hybrid_cpu_threads = 1;
  // nvJPEG decode states per backend (1..8), used round-robin: batched call
  // k+1 may be queued while call k still decodes, waiting only for the call
  // that last used its state (k+1-states). 0: the environment's
  // SLUICE_NVJPEG_STATES, else 1 (each call waits for the previous one's
  // decode): on an H200 two or three states were 0.78x as fast as one.
  int nvjpeg_states = 0;
  // The CPU decoder's options (fancy_upscaling, strict, dct_method,
  // max_pixels, try_recover_truncated...). channels and ratio are forced to
  // 3 and 1, name to EncodedJpeg::name. max_pixels also bounds GPU images.
  ops::DecodeJpegOptions cpu_options;
};

// Counts since the decoder was made.
struct JpegDecodeStats {
  int64_t hardware = 0;    // images decoded by the GPU's JPEG engines
  int64_t gpu_hybrid = 0;  // images decoded by GPU_HYBRID
  int64_t cpu = 0;         // images decoded on the CPU (all reasons)
  int64_t failed = 0;      // images no backend could decode
  int64_t gpu_batch_calls = 0;
  int64_t gpu_batch_failures = 0;  // batched calls nvJPEG refused (their images went to the CPU)
  int64_t staged_bytes = 0;        // bitstream bytes copied into pinned staging memory
  int64_t state_waits = 0;  // batched calls that blocked for their nvJPEG state's previous call
  int nvjpeg_states = 0;    // decode states per backend (0 without GPU backends)
};

class JpegDecoder {
 public:
  // A decoder queuing its work on `stream`. On a GPU stream it opens
  // libnvjpeg.so.13 and makes its handles; when nvJPEG cannot be used (see
  // NvjpegAvailability) it still works, decoding every image on the CPU,
  // and unavailable_reason() says why. InvalidArgument for bad options.
  static Result<std::unique_ptr<JpegDecoder>> Create(Stream& stream,
                                                     const JpegDecoderOptions& options = {});
  virtual ~JpegDecoder() = default;

  // Decodes each image into uint8 [height, width, 3], in order; one result
  // per image. The work is queued on the stream; GPU_HYBRID and CPU decodes
  // run on the calling thread before it returns. Calls may follow each
  // other without waiting for the stream: a backend's nvJPEG states are
  // used in turn (JpegDecoderOptions::nvjpeg_states), each reused only once
  // the GPU has passed its previous batched call (the calling thread waits
  // for that, if needed).
  virtual std::vector<Result<DeviceTensor>> DecodeEach(std::span<const EncodedJpeg> images) = 0;
  // All images, or the first image's error.
  Result<std::vector<DeviceTensor>> Decode(std::span<const EncodedJpeg> images);

  // The backend that decoded each image of the last DecodeEach/Decode call
  // (kCpu also for failed images).
  virtual const std::vector<JpegBackend>& last_backends() const = 0;
  virtual JpegDecodeStats stats() const = 0;
  // Whether the GPU backends are in use, and why not ("" when they are).
  virtual bool gpu_enabled() const = 0;
  virtual bool has_hardware() const = 0;
  virtual std::string_view unavailable_reason() const = 0;
  // The stream the decoder queues its work on.
  virtual Stream& stream() const = 0;
};

// OK when nvJPEG can decode on GPUs in this process; otherwise Unavailable
// saying why: built without nvjpeg.h, libnvjpeg.so.13 not found (the
// dlerror), or a missing symbol. Does not need or touch a GPU.
Status NvjpegAvailability();

}  // namespace sluice::gpu

#endif  // SLUICE_OPS_CUDA_JPEG_DECODER_H_
