// JpegDecoder (jpeg_decoder.h): routes each image to a backend, cuts the
// GPU images into batched calls staged through pinned memory, and decodes
// the rest, and whatever a batched call refused, on the CPU.
#include "sluice/ops/cuda/jpeg_decoder.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "sluice/core/buffer.h"
#include "sluice/device/runtime.h"
#include "sluice/ops/cuda/internal/jpeg_engine.h"
#include "sluice/device/pinned_host_pool.h"

namespace sluice::gpu {

std::string_view JpegBackendName(JpegBackend backend) {
  switch (backend) {
    case JpegBackend::kHardware: return "hardware";
    case JpegBackend::kGpuHybrid: return "gpu_hybrid";
    case JpegBackend::kCpu: return "cpu";
  }
  return "?";
}

Result<std::vector<DeviceTensor>> JpegDecoder::Decode(std::span<const EncodedJpeg> images) {
  std::vector<Result<DeviceTensor>> each = DecodeEach(images);
  std::vector<DeviceTensor> out;
  out.reserve(each.size());
  for (Result<DeviceTensor>& r : each) {
    if (!r.ok()) return r.status();
    out.push_back(*std::move(r));
  }
  return out;
}

}  // namespace sluice::gpu

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::EncodedJpeg;
using gpu::JpegBackend;
using gpu::JpegDecoder;
using gpu::JpegDecoderOptions;
using gpu::JpegDecodeStats;
using gpu::PinnedBuffer;
using gpu::PinnedHostPool;
using gpu::Stream;

namespace {

// Bitstreams start on cache lines in the staging buffer.
constexpr size_t kStagingAlignment = 64;

using Staged = std::vector<PinnedBuffer>;

class Decoder final : public JpegDecoder {
 public:
  Decoder(Stream& stream, const JpegDecoderOptions& options, std::unique_ptr<JpegEngine> engine,
          std::string reason, PinnedHostPool staging)
      : stream_(stream),
        options_(options),
        engine_(std::move(engine)),
        reason_(std::move(reason)),
        staging_(std::move(staging)) {}

  std::vector<Result<DeviceTensor>> DecodeEach(std::span<const EncodedJpeg> images) override {
    const size_t n = images.size();
    std::vector<Result<DeviceTensor>> results(n, Status::Internal("jpeg decoder: not decoded"));
    last_backends_.assign(n, JpegBackend::kCpu);
    auto staged = std::make_shared<Staged>();
    std::vector<size_t> cpu;
    std::array<std::vector<size_t>, 2> gpu;  // kHardware, kGpuHybrid
    std::vector<std::array<int64_t, 2>> dims(n);
    for (size_t i = 0; i < n; ++i) {
      if (engine_ == nullptr) {
        cpu.push_back(i);
        continue;
      }
      Result<ops::JpegHeader> h = ops::ReadJpegHeader(images[i].bytes, images[i].name);
      if (!NotForNvjpeg(h, options_.cpu_options.max_pixels).empty()) {
        cpu.push_back(i);
        continue;
      }
      const JpegBackend b =
          engine_->Route(images[i].bytes, options_.use_hardware, options_.use_gpu_hybrid);
      if (b == JpegBackend::kCpu) {
        cpu.push_back(i);
        continue;
      }
      dims[i] = {h->height, h->width};
      gpu[static_cast<size_t>(b)].push_back(i);
    }
    // A batched call fails as a whole for one image it cannot take: the
    // images of a failed hardware call get a GPU_HYBRID call of their own,
    // those of a failed GPU_HYBRID call go to the CPU.
    std::vector<size_t> retry;
    const std::array<std::pair<JpegBackend, std::vector<size_t>*>, 3> passes = {
        {{JpegBackend::kHardware, &gpu[0]},
         {JpegBackend::kGpuHybrid, &gpu[1]},
         {JpegBackend::kGpuHybrid, &retry}}};
    for (const auto& [b, list] : passes) {
      const std::vector<size_t>& all = *list;
      for (IndexRange r : SplitIntoBatches(all.size(), static_cast<size_t>(options_.max_batch))) {
        std::span<const size_t> batch(all.data() + r.begin, r.end - r.begin);
        ++stats_.gpu_batch_calls;
        if (Status s = RunBatch(b, images, batch, dims, *staged, results); !s.ok()) {
          ++stats_.gpu_batch_failures;
          const bool to_hybrid = b == JpegBackend::kHardware && options_.use_gpu_hybrid;
          (to_hybrid ? retry : cpu)
              .insert((to_hybrid ? retry : cpu).end(), batch.begin(), batch.end());
          continue;
        }
        for (size_t k : batch) last_backends_[k] = b;
        (b == JpegBackend::kHardware ? stats_.hardware : stats_.gpu_hybrid) +=
            static_cast<int64_t>(batch.size());
      }
    }
    for (size_t k : cpu) {
      results[k] = DecodeOnCpu(images[k], *staged);
      ++(results[k].ok() ? stats_.cpu : stats_.failed);
    }
    Release(std::move(staged));
    return results;
  }

  const std::vector<JpegBackend>& last_backends() const override { return last_backends_; }
  JpegDecodeStats stats() const override {
    JpegDecodeStats s = stats_;
    if (engine_ != nullptr) {
      s.state_waits = engine_->state_waits();
      s.nvjpeg_states = engine_->states();
    }
    return s;
  }
  bool gpu_enabled() const override { return engine_ != nullptr; }
  bool has_hardware() const override { return engine_ != nullptr && engine_->has_hardware(); }
  std::string_view unavailable_reason() const override { return reason_; }
  Stream& stream() const override { return stream_; }

 private:
  // One batched call: the bitstreams copied into one staging buffer, an
  // output tensor per image. `staged` keeps the buffer even when the call
  // fails (nvJPEG may have queued copies from it).
  Status RunBatch(JpegBackend backend, std::span<const EncodedJpeg> images,
                  std::span<const size_t> batch, const std::vector<std::array<int64_t, 2>>& dims,
                  Staged& staged, std::vector<Result<DeviceTensor>>& results) {
    std::vector<size_t> sizes;
    sizes.reserve(batch.size());
    for (size_t k : batch) sizes.push_back(images[k].bytes.size());
    const StagingLayout layout = LayOutBitstreams(sizes, kStagingAlignment);
    SLUICE_ASSIGN_OR_RETURN(PinnedBuffer buffer,
                            staging_.Acquire(std::max<size_t>(layout.total, 1)));
    auto* base = static_cast<char*>(buffer.data());
    std::vector<std::string_view> views;
    std::vector<DeviceTensor> outputs;
    views.reserve(batch.size());
    outputs.reserve(batch.size());
    for (size_t j = 0; j < batch.size(); ++j) {
      const std::string_view bytes = images[batch[j]].bytes;
      if (!bytes.empty()) std::memcpy(base + layout.offsets[j], bytes.data(), bytes.size());
      views.emplace_back(base + layout.offsets[j], bytes.size());
      const auto [h, w] = dims[batch[j]];
      SLUICE_ASSIGN_OR_RETURN(
          DeviceTensor out,
          AllocateDeviceTensor(stream_.device(), DType::kUInt8, Shape({h, w, 3}), &stream_));
      outputs.push_back(std::move(out));
    }
    stats_.staged_bytes += static_cast<int64_t>(layout.total);
    staged.push_back(std::move(buffer));
    SLUICE_RETURN_IF_ERROR(engine_->DecodeBatched(backend, views, outputs, stream_));
    for (size_t j = 0; j < batch.size(); ++j) results[batch[j]] = std::move(outputs[j]);
    return Status::OK();
  }

  // ops::DecodeJpeg into pinned memory, then a copy to the device.
  Result<DeviceTensor> DecodeOnCpu(const EncodedJpeg& image, Staged& staged) {
    ops::DecodeJpegOptions o = options_.cpu_options;
    o.channels = 3;
    o.ratio = 1;
    o.min_width = o.min_height = 0;
    o.name = image.name;
    SLUICE_ASSIGN_OR_RETURN(Shape shape, ops::JpegOutputShape(image.bytes, o));
    const size_t bytes = static_cast<size_t>(shape.num_elements());
    SLUICE_ASSIGN_OR_RETURN(PinnedBuffer buffer, staging_.Acquire(std::max<size_t>(bytes, 1)));
    SLUICE_ASSIGN_OR_RETURN(
        Tensor host,
        Tensor::FromBuffer(DType::kUInt8, shape, Buffer::Wrap(buffer.data(), bytes, {})));
    SLUICE_RETURN_IF_ERROR(ops::DecodeJpegInto(image.bytes, o, &host));
    SLUICE_ASSIGN_OR_RETURN(DeviceTensor out,
                            AllocateDeviceTensor(stream_.device(), DType::kUInt8, shape, &stream_));
    SLUICE_RETURN_IF_ERROR(CopyToDeviceAsync(buffer.data(), out, stream_));
    staged.push_back(std::move(buffer));
    return out;
  }

  // The staging buffers go back to their pool once the stream has passed
  // the work that reads them (at once if a host function cannot be queued:
  // then after waiting for the stream).
  void Release(std::shared_ptr<Staged> staged) {
    if (staged->empty()) return;
    if (stream_.LaunchHostFunc([staged] {}).ok()) return;
    (void)stream_.Synchronize();
  }

  Stream& stream_;
  const JpegDecoderOptions options_;
  std::unique_ptr<JpegEngine> engine_;
  std::string reason_;
  PinnedHostPool staging_;
  std::vector<JpegBackend> last_backends_;
  JpegDecodeStats stats_;
};

Status CheckOptions(const JpegDecoderOptions& o) {
  if (o.max_batch < 1 || o.max_batch > 4096) {
    return Status::InvalidArgument("JpegDecoder: max_batch must be in 1..4096, not " +
                                   std::to_string(o.max_batch));
  }
  if (o.hybrid_cpu_threads < 1 || o.hybrid_cpu_threads > 256) {
    return Status::InvalidArgument("JpegDecoder: hybrid_cpu_threads must be in 1..256, not " +
                                   std::to_string(o.hybrid_cpu_threads));
  }
  return ResolveNvjpegStates(o.nvjpeg_states, nullptr).status();
}

}  // namespace

std::unique_ptr<JpegDecoder> NewJpegDecoderWithEngine(Stream& stream,
                                                      const JpegDecoderOptions& options,
                                                      std::unique_ptr<JpegEngine> engine,
                                                      std::string reason) {
  Result<const DeviceRuntime*> runtime = GetDeviceRuntime(stream.device());
  PinnedHostPool staging =
      runtime.ok() ? (*runtime)->staging : GetDeviceRuntime(Device::Cpu()).value()->staging;
  return std::make_unique<Decoder>(stream, options, std::move(engine), std::move(reason),
                                   std::move(staging));
}

}  // namespace sluice::gpu_internal

namespace sluice::gpu {

Result<std::unique_ptr<JpegDecoder>> JpegDecoder::Create(Stream& stream,
                                                         const JpegDecoderOptions& options) {
  SLUICE_RETURN_IF_ERROR(gpu_internal::CheckOptions(options));
  SLUICE_RETURN_IF_ERROR(gpu_internal::GetDeviceRuntime(stream.device()).status());
  std::unique_ptr<gpu_internal::JpegEngine> engine;
  std::string reason;
  SLUICE_ASSIGN_OR_RETURN(const int states,
                          gpu_internal::ResolveNvjpegStates(options.nvjpeg_states,
                                                            std::getenv("SLUICE_NVJPEG_STATES")));
  if (!options.use_gpu) {
    reason = "JpegDecoderOptions::use_gpu is false";
  } else if (stream.device().is_cpu()) {
    engine = gpu_internal::NewHostJpegEngine(nullptr, states);
  } else if (Result<std::unique_ptr<gpu_internal::JpegEngine>> e = gpu_internal::NewNvjpegEngine(
                 stream, options.max_batch, options.hybrid_cpu_threads, states);
             e.ok()) {
    engine = *std::move(e);
  } else {
    reason = std::string(e.status().message());
  }
  return gpu_internal::NewJpegDecoderWithEngine(stream, options, std::move(engine),
                                                std::move(reason));
}

}  // namespace sluice::gpu
