// The JPEG decoder's parts (jpeg_decoder.h), apart so the host-side logic
// is tested without a GPU: which backend takes an image, how a batch is cut
// into batched calls and laid out in staging memory, and the engines that
// run the GPU backends' batched calls (nvJPEG, or libjpeg-turbo standing in
// for it on the host device). Internal.
//
// Thread-safety: the functions are pure; an engine is used by one thread at
// a time.
#ifndef SLUICE_OPS_CUDA_INTERNAL_JPEG_ENGINE_H_
#define SLUICE_OPS_CUDA_INTERNAL_JPEG_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/device/device_memory.h"
#include "sluice/ops/cuda/jpeg_decoder.h"
#include "sluice/device/stream.h"
#include "sluice/ops/jpeg.h"

namespace sluice::gpu_internal {

// Why an image is not given to nvJPEG, from its header: "" when it may be
// (baseline Huffman, 8-bit, gray or YCbCr with 4:4:4, 4:2:2, 4:2:0, 4:4:0
// or 4:1:1 sampling, at most max_pixels); otherwise a short reason
// ("progressive", "CMYK", "header: <error>"...).
std::string NotForNvjpeg(const Result<ops::JpegHeader>& header, int64_t max_pixels);

// [begin, end) index ranges of at most max_batch each, covering [0, count),
// as equal in size as possible (REQUIRES: max_batch >= 1).
struct IndexRange {
  size_t begin = 0;
  size_t end = 0;
};
std::vector<IndexRange> SplitIntoBatches(size_t count, size_t max_batch);

// Where each bitstream goes in one staging buffer: offsets aligned to
// `alignment` (a power of two), and the total size.
struct StagingLayout {
  std::vector<size_t> offsets;
  size_t total = 0;
};
StagingLayout LayOutBitstreams(std::span<const size_t> sizes, size_t alignment);

// How many nvJPEG decode states a backend rotates through (JpegDecoderOptions::
// nvjpeg_states): `option` when it is 1..kMaxNvjpegStates, else (0) the
// environment's SLUICE_NVJPEG_STATES (`env`, null when unset), else 1: on
// an H200 (docs/perf.md) two or three states decoded 0.78x as fast as one
// with three batches in flight.
// InvalidArgument naming the variable for a value that is not 1..8.
constexpr int kMaxNvjpegStates = 8;
constexpr int kDefaultNvjpegStates = 1;
Result<int> ResolveNvjpegStates(int option, const char* env);

// Round-robin over a backend's decode states (their buffers, the event of
// each one's last batched call): call k takes state k % count, so queuing
// call k+1 waits only for call k+1-count (the last one that used the same
// state), not for call k. Bookkeeping only; the engine records and waits
// for the events.
class StateRing {
 public:
  explicit StateRing(int count) : pending_(static_cast<size_t>(count), false) {}
  int count() const { return static_cast<int>(pending_.size()); }
  // The state for the next call (advances the ring).
  int Take() {
    const int slot = next_;
    next_ = (next_ + 1) % count();
    return slot;
  }
  // Whether `slot`'s last call was queued and not yet waited for: its
  // buffers may still be read or written by the GPU.
  bool pending(int slot) const { return pending_[static_cast<size_t>(slot)]; }
  void set_pending(int slot, bool pending) { pending_[static_cast<size_t>(slot)] = pending; }

 private:
  std::vector<bool> pending_;
  int next_ = 0;
};

// Runs the GPU backends' batched calls.
class JpegEngine {
 public:
  virtual ~JpegEngine() = default;
  // Whether there are JPEG engines (NVJPEG_BACKEND_HARDWARE made a handle).
  virtual bool has_hardware() const = 0;
  // kHardware if the engines take `bytes` (an image NotForNvjpeg accepts),
  // kGpuHybrid if only the hybrid backend does, kCpu if neither.
  virtual gpu::JpegBackend Route(std::string_view bytes, bool allow_hardware,
                                 bool allow_hybrid) = 0;
  // Decodes bitstreams[i] into outputs[i] (uint8 [h, w, 3] of the image's
  // size, on the stream's device) with `backend` (kHardware or kGpuHybrid),
  // queued on `stream`. The bitstreams are in pinned host memory that stays
  // valid until the stream has passed this work. An error means the call
  // failed as a whole: the outputs are unspecified (the caller decodes
  // those images again on the CPU).
  virtual Status DecodeBatched(gpu::JpegBackend backend,
                               std::span<const std::string_view> bitstreams,
                               std::span<DeviceTensor> outputs, gpu::Stream& stream) = 0;
  // Whether nvJPEG's batched call of `backend` would take `bytes` (an image
  // Route sent to `backend`) with the region of interest (x, y, w, h)
  // decoded only: nvjpegDecodeBatchedSupportedEx with decode params set by
  // nvjpegDecodeParamsSetROI; (0, 0, -1, -1) asks for the whole image. A
  // probe for docs/gpu.md ("region of interest"); the decoder does not
  // decode regions. Unavailable where there is no such question (the
  // host engine, GPU_HYBRID, a library without the functions).
  virtual Result<bool> BatchedRoiSupported(gpu::JpegBackend /*backend*/, std::string_view /*bytes*/,
                                           int /*x*/, int /*y*/, int /*w*/, int /*h*/) {
    return Status::Unavailable("JPEG engine: no region-of-interest probe");
  }
  // Decode states per backend (StateRing::count).
  virtual int states() const = 0;
  // Batched calls that found their state's previous call still running on
  // the stream and waited for it (the calling thread blocked).
  virtual int64_t state_waits() const = 0;
};

// libjpeg-turbo standing in for nvJPEG on the host device: "hardware" takes
// images whose size is a multiple of 8 both ways, "hybrid" the others (a
// made-up split, so both paths get images); DecodeBatched decodes each
// bitstream with ops::DecodeJpeg on the calling thread into the host buffer
// of its state (`states` per backend, rotated like nvJPEG's and reused
// only after that state's last call has passed the stream) and queues the
// copies into the outputs on the stream. `refuse`, when given, fails any
// batched call of a backend holding a bitstream it returns true for (as
// one bad image fails an nvJPEG batch).
std::unique_ptr<JpegEngine> NewHostJpegEngine(
    std::function<bool(gpu::JpegBackend backend, std::string_view bytes)> refuse = nullptr,
    int states = kDefaultNvjpegStates);

// nvJPEG on `stream`'s GPU: hardware and GPU_HYBRID handles, `states`
// decode states each.
// Unavailable when nvJPEG cannot be used (NvjpegAvailability) or the GPU
// has no hybrid handle; a GPU without engines gives has_hardware() false.
Result<std::unique_ptr<JpegEngine>> NewNvjpegEngine(gpu::Stream& stream, int max_batch,
                                                    int hybrid_cpu_threads, int states);

// The decoder over a given engine (null: every image on the CPU, with
// `reason`). For tests.
std::unique_ptr<gpu::JpegDecoder> NewJpegDecoderWithEngine(gpu::Stream& stream,
                                                           const gpu::JpegDecoderOptions& options,
                                                           std::unique_ptr<JpegEngine> engine,
                                                           std::string reason);

}  // namespace sluice::gpu_internal

#endif  // SLUICE_OPS_CUDA_INTERNAL_JPEG_ENGINE_H_
