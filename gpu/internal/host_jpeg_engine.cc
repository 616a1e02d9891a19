// libjpeg-turbo standing in for nvJPEG on the host device (jpeg_engine.h),
// so the decoder's routing, batching, staging and fallback run without a
// GPU. Like nvJPEG's batched call, a call fails as a whole, before any
// output is written, when one of its images cannot be decoded.
#include <memory>
#include <utility>

#include "sluice/gpu/internal/jpeg_engine.h"

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::DeviceTensor;
using gpu::JpegBackend;
using gpu::Stream;

namespace {

class HostJpegEngine final : public JpegEngine {
 public:
  explicit HostJpegEngine(std::function<bool(JpegBackend, std::string_view)> refuse)
      : refuse_(std::move(refuse)) {}

  bool has_hardware() const override { return true; }

  JpegBackend Route(std::string_view bytes, bool allow_hardware, bool allow_hybrid) override {
    Result<ops::JpegHeader> h = ops::ReadJpegHeader(bytes);
    if (!h.ok()) return JpegBackend::kCpu;
    const bool aligned = h->width % 8 == 0 && h->height % 8 == 0;
    if (aligned && allow_hardware) return JpegBackend::kHardware;
    return allow_hybrid ? JpegBackend::kGpuHybrid : JpegBackend::kCpu;
  }

  Status DecodeBatched(JpegBackend backend, std::span<const std::string_view> bitstreams,
                       std::span<const DeviceTensor> outputs, Stream& stream) override {
    if (backend == JpegBackend::kCpu || bitstreams.size() != outputs.size()) {
      return Status::InvalidArgument("host JPEG engine: bad batched call");
    }
    auto decoded = std::make_shared<std::vector<Tensor>>();
    decoded->reserve(bitstreams.size());
    ops::DecodeJpegOptions o;
    o.channels = 3;
    for (size_t i = 0; i < bitstreams.size(); ++i) {
      if (refuse_ && refuse_(backend, bitstreams[i])) {
        return Status::InvalidArgument("host JPEG engine: image " + std::to_string(i) +
                                       " of the batch refused");
      }
      Result<Tensor> t = ops::DecodeJpeg(bitstreams[i], o);
      if (!t.ok()) return t.status();
      if (t->byte_size() != outputs[i].byte_size()) {
        return Status::Internal("host JPEG engine: output size differs from the header's");
      }
      decoded->push_back(*std::move(t));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      SLUICE_RETURN_IF_ERROR(CopyToDeviceAsync((*decoded)[i].raw_data(), outputs[i], stream));
    }
    // The decoded pixels live until the stream has copied them.
    return stream.LaunchHostFunc([decoded] {});
  }

 private:
  std::function<bool(JpegBackend, std::string_view)> refuse_;
};

}  // namespace

std::unique_ptr<JpegEngine> NewHostJpegEngine(
    std::function<bool(JpegBackend, std::string_view)> refuse) {
  return std::make_unique<HostJpegEngine>(std::move(refuse));
}

}  // namespace sluice::gpu_internal
