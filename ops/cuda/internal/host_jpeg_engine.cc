// libjpeg-turbo standing in for nvJPEG on the host device (jpeg_engine.h),
// so the decoder's routing, batching, staging and fallback run without a
// GPU. Like nvJPEG's batched call, a call fails as a whole, before any
// output is written, when one of its images cannot be decoded; like
// nvJPEG's states, each backend's state buffers are used in turn and reused
// only after the event of their last call.
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sluice/ops/cuda/internal/jpeg_engine.h"

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::JpegBackend;
using gpu::Stream;

namespace {

class HostJpegEngine final : public JpegEngine {
 public:
  HostJpegEngine(std::function<bool(JpegBackend, std::string_view)> refuse, int states)
      : refuse_(std::move(refuse)), backends_{Backend(states), Backend(states)} {}

  // The states' buffers may still be read by queued copies.
  ~HostJpegEngine() override {
    for (Backend& b : backends_) {
      for (int i = 0; i < b.ring.count(); ++i) {
        if (b.ring.pending(i)) (void)b.slots[static_cast<size_t>(i)].done->Synchronize();
      }
    }
  }

  bool has_hardware() const override { return true; }
  int states() const override { return backends_[0].ring.count(); }
  int64_t state_waits() const override { return state_waits_; }

  JpegBackend Route(std::string_view bytes, bool allow_hardware, bool allow_hybrid) override {
    Result<ops::JpegHeader> h = ops::ReadJpegHeader(bytes);
    if (!h.ok()) return JpegBackend::kCpu;
    const bool aligned = h->width % 8 == 0 && h->height % 8 == 0;
    if (aligned && allow_hardware) return JpegBackend::kHardware;
    return allow_hybrid ? JpegBackend::kGpuHybrid : JpegBackend::kCpu;
  }

  Status DecodeBatched(JpegBackend backend, std::span<const std::string_view> bitstreams,
                       std::span<DeviceTensor> outputs, Stream& stream) override {
    if (backend == JpegBackend::kCpu || bitstreams.size() != outputs.size()) {
      return Status::InvalidArgument("host JPEG engine: bad batched call");
    }
    Backend& b = backends_[backend == JpegBackend::kHardware ? 0 : 1];
    const int slot = b.ring.Take();
    State& state = b.slots[static_cast<size_t>(slot)];
    if (b.ring.pending(slot)) {  // as nvJPEG: the state's buffers are reused after its last call
      b.ring.set_pending(slot, false);
      SLUICE_ASSIGN_OR_RETURN(const bool passed, state.done->Query());
      if (!passed) ++state_waits_;
      SLUICE_RETURN_IF_ERROR(state.done->Synchronize());
    }
    std::vector<Tensor> decoded;
    decoded.reserve(bitstreams.size());
    ops::DecodeJpegOptions o;
    o.channels = 3;
    size_t total = 0;
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
      total += t->byte_size();
      decoded.push_back(*std::move(t));
    }
    // The pixels go through the state's buffer (nvJPEG's state buffers), read
    // by the copies until the state's event.
    if (state.buffer.size() < total) state.buffer.resize(total);
    size_t offset = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::memcpy(state.buffer.data() + offset, decoded[i].raw_data(), decoded[i].byte_size());
      SLUICE_RETURN_IF_ERROR(CopyToDeviceAsync(state.buffer.data() + offset, outputs[i], stream));
      offset += decoded[i].byte_size();
    }
    if (state.done == nullptr) {
      SLUICE_ASSIGN_OR_RETURN(state.done, gpu::NewEvent(stream.device()));
    }
    SLUICE_RETURN_IF_ERROR(stream.Record(*state.done));
    b.ring.set_pending(slot, true);
    return Status::OK();
  }

 private:
  struct State {
    std::vector<unsigned char> buffer;
    std::unique_ptr<gpu::Event> done;  // recorded after the state's last call
  };
  struct Backend {
    explicit Backend(int states) : ring(states), slots(static_cast<size_t>(states)) {}
    StateRing ring;
    std::vector<State> slots;
  };

  std::function<bool(JpegBackend, std::string_view)> refuse_;
  std::array<Backend, 2> backends_;  // kHardware, kGpuHybrid
  int64_t state_waits_ = 0;
};

}  // namespace

std::unique_ptr<JpegEngine> NewHostJpegEngine(
    std::function<bool(JpegBackend, std::string_view)> refuse, int states) {
  return std::make_unique<HostJpegEngine>(std::move(refuse), states);
}

}  // namespace sluice::gpu_internal
