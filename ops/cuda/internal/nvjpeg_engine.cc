// nvJPEG for the JPEG decoder (jpeg_engine.h): libnvjpeg.so.13 opened at
// run time (dlopen; each function resolved with dlsym into a typed table, so
// ops/cuda does not link it), a hardware and a GPU_HYBRID handle per
// engine with N decode states each (used in turn, so the host part of
// batch k+1 runs while batch k decodes), and nvjpegDecodeBatched into
// interleaved RGB.
//
// Built with nvjpeg.h only when CMake found it (SLUICE_HAVE_NVJPEG);
// otherwise every entry point says so.
#include "sluice/ops/cuda/internal/jpeg_engine.h"
#include "sluice/ops/cuda/jpeg_decoder.h"

#if SLUICE_HAVE_NVJPEG

#include <nvjpeg.h>

#include <string>
#include <utility>
#include <vector>

#include "sluice/device/cuda/cuda_error.h"
#include "sluice/device/runtime.h"
#include "sluice/device/dynamic_library.h"

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::JpegBackend;
using gpu::Stream;

namespace {

// Every nvJPEG function used; pointers typed from the prototypes.
#define SLUICE_NVJPEG_FUNCTIONS(X) \
  X(nvjpegGetProperty)             \
  X(nvjpegCreateEx)                \
  X(nvjpegDestroy)                 \
  X(nvjpegJpegStateCreate)         \
  X(nvjpegJpegStateDestroy)        \
  X(nvjpegJpegStreamCreate)        \
  X(nvjpegJpegStreamDestroy)       \
  X(nvjpegJpegStreamParseHeader)   \
  X(nvjpegDecodeBatchedSupported)  \
  X(nvjpegDecodeBatchedInitialize) \
  X(nvjpegDecodeBatched)

// Used only by the region-of-interest probe: resolved when present, never
// required.
#define SLUICE_NVJPEG_OPTIONAL_FUNCTIONS(X) \
  X(nvjpegDecodeParamsCreate)               \
  X(nvjpegDecodeParamsDestroy)              \
  X(nvjpegDecodeParamsSetROI)               \
  X(nvjpegDecodeBatchedSupportedEx)

struct Api {
#define SLUICE_NVJPEG_POINTER(name) decltype(&::name) name = nullptr;
  SLUICE_NVJPEG_FUNCTIONS(SLUICE_NVJPEG_POINTER)
  SLUICE_NVJPEG_OPTIONAL_FUNCTIONS(SLUICE_NVJPEG_POINTER)
#undef SLUICE_NVJPEG_POINTER
};

struct Library {
  Status status;  // OK when loaded, the right major version, every symbol resolved
  Api api;
};

// Opens libnvjpeg.so.13 once (never closed): from the library path, else
// where scripts/fetch-nvjpeg.sh put it for this build.
const Library& GetLibrary() {
  static const Library* const library = [] {
    auto* lib = new Library;
    Result<DynamicLibrary> handle =
        DynamicLibrary::OpenFirst("libnvjpeg.so.13 (scripts/fetch-nvjpeg.sh fetches it)",
                                  {"libnvjpeg.so.13", SLUICE_NVJPEG_LIBRARY_FALLBACK});
    if (!handle.ok()) {
      lib->status = handle.status();
      return lib;
    }
    std::string missing;
#define SLUICE_NVJPEG_RESOLVE(name) \
  if (!handle->Resolve(#name, &lib->api.name)) missing += " " #name;
    SLUICE_NVJPEG_FUNCTIONS(SLUICE_NVJPEG_RESOLVE)
#undef SLUICE_NVJPEG_RESOLVE
#define SLUICE_NVJPEG_RESOLVE_OPTIONAL(name) (void)handle->Resolve(#name, &lib->api.name);
    SLUICE_NVJPEG_OPTIONAL_FUNCTIONS(SLUICE_NVJPEG_RESOLVE_OPTIONAL)
#undef SLUICE_NVJPEG_RESOLVE_OPTIONAL
    if (!missing.empty()) {
      lib->status = Status::Unavailable("libnvjpeg.so.13 lacks" + missing);
      return lib;
    }
    int major = 0;
    if (lib->api.nvjpegGetProperty(MAJOR_VERSION, &major) != NVJPEG_STATUS_SUCCESS ||
        major != NVJPEG_VER_MAJOR) {
      lib->status = Status::Unavailable("libnvjpeg is version " + std::to_string(major) +
                                        "; sluice was built against nvJPEG " +
                                        std::to_string(NVJPEG_VER_MAJOR));
    }
    return lib;
  }();
  return *library;
}

const char* StatusName(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "nvjpegStatus_t(unknown)";
}

Status NvjpegError(std::string_view call, nvjpegStatus_t s) {
  const std::string what = std::string(call) + " failed: " + StatusName(s);
  if (s == NVJPEG_STATUS_ALLOCATOR_FAILURE) return Status::ResourceExhausted(what);
  if (s == NVJPEG_STATUS_BAD_JPEG || s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED ||
      s == NVJPEG_STATUS_INCOMPLETE_BITSTREAM) {
    return Status::InvalidArgument(what);
  }
  return Status::Internal(what);
}

// One decode state of a backend: the nvJPEG state (its host and device
// buffers), the batch size it was initialized for, and an event recorded
// after its last batched call: the state is reused only once the GPU has
// passed that call (the next call's host part would overwrite its buffers).
struct DecodeState {
  nvjpegJpegState_t state = nullptr;
  int initialized_batch = -1;
  cudaEvent_t done = nullptr;
};

// One nvJPEG backend: its handle and its states, used in turn (StateRing),
// so call k+1 waits only for call k+1-count, not for call k.
struct Backend {
  explicit Backend(int states) : ring(states), states(static_cast<size_t>(states)) {}
  nvjpegHandle_t handle = nullptr;
  StateRing ring;
  std::vector<DecodeState> states;
};

class NvjpegEngine final : public JpegEngine {
 public:
  NvjpegEngine(Stream& stream, int ordinal, int hybrid_cpu_threads, int states)
      : api_(GetLibrary().api),
        stream_(stream),
        ordinal_(ordinal),
        hybrid_cpu_threads_(hybrid_cpu_threads),
        hardware_(states),
        hybrid_(states) {}

  ~NvjpegEngine() override {
    (void)stream_.Synchronize();  // the states' buffers may be in use by queued work
    ScopedDevice device(ordinal_);
    if (parsed_ != nullptr) api_.nvjpegJpegStreamDestroy(parsed_);
    for (Backend* b : {&hardware_, &hybrid_}) {
      for (DecodeState& d : b->states) {
        if (d.done != nullptr) cudaEventDestroy(d.done);
        if (d.state != nullptr) api_.nvjpegJpegStateDestroy(d.state);
      }
      if (b->handle != nullptr) api_.nvjpegDestroy(b->handle);
    }
  }

  // The hybrid handle must open; the hardware one only where the GPU has
  // JPEG engines.
  Status Init() {
    ScopedDevice device(ordinal_);
    SLUICE_RETURN_IF_ERROR(device.status());
    if (api_.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hardware_.handle) ==
            NVJPEG_STATUS_SUCCESS &&
        CreateStates(hardware_) == NVJPEG_STATUS_SUCCESS &&
        api_.nvjpegJpegStreamCreate(hardware_.handle, &parsed_) == NVJPEG_STATUS_SUCCESS) {
      has_hardware_ = true;
    }
    nvjpegStatus_t s =
        api_.nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID, nullptr, nullptr, 0, &hybrid_.handle);
    if (s != NVJPEG_STATUS_SUCCESS) return NvjpegError("nvjpegCreateEx(GPU_HYBRID)", s);
    s = CreateStates(hybrid_);
    if (s != NVJPEG_STATUS_SUCCESS) return NvjpegError("nvjpegJpegStateCreate(GPU_HYBRID)", s);
    for (Backend* b : {&hardware_, &hybrid_}) {
      for (DecodeState& d : b->states) {
        SLUICE_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&d.done, cudaEventDisableTiming),
                                          "cudaEventCreateWithFlags"));
      }
    }
    return Status::OK();
  }

  bool has_hardware() const override { return has_hardware_; }
  int states() const override { return hybrid_.ring.count(); }
  int64_t state_waits() const override { return state_waits_; }

  JpegBackend Route(std::string_view bytes, bool allow_hardware, bool allow_hybrid) override {
    if (allow_hardware && has_hardware_) {
      const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
      int not_supported = 1;  // nvJPEG: 0 means supported
      if (api_.nvjpegJpegStreamParseHeader(hardware_.handle, data, bytes.size(), parsed_) ==
              NVJPEG_STATUS_SUCCESS &&
          api_.nvjpegDecodeBatchedSupported(hardware_.handle, parsed_, &not_supported) ==
              NVJPEG_STATUS_SUCCESS &&
          not_supported == 0) {
        return JpegBackend::kHardware;
      }
    }
    return allow_hybrid ? JpegBackend::kGpuHybrid : JpegBackend::kCpu;
  }

  Result<bool> BatchedRoiSupported(JpegBackend backend, std::string_view bytes, int x, int y, int w,
                                   int h) override {
    if (backend != JpegBackend::kHardware || !has_hardware_) {
      return Status::Unavailable("nvJPEG ROI probe: the hardware backend only");
    }
    if (api_.nvjpegDecodeParamsCreate == nullptr || api_.nvjpegDecodeParamsDestroy == nullptr ||
        api_.nvjpegDecodeParamsSetROI == nullptr ||
        api_.nvjpegDecodeBatchedSupportedEx == nullptr) {
      return Status::Unavailable("nvJPEG ROI probe: libnvjpeg.so.13 lacks the functions");
    }
    ScopedDevice device(ordinal_);
    SLUICE_RETURN_IF_ERROR(device.status());
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    nvjpegStatus_t s =
        api_.nvjpegJpegStreamParseHeader(hardware_.handle, data, bytes.size(), parsed_);
    if (s != NVJPEG_STATUS_SUCCESS) return NvjpegError("nvjpegJpegStreamParseHeader", s);
    nvjpegDecodeParams_t params = nullptr;
    s = api_.nvjpegDecodeParamsCreate(hardware_.handle, &params);
    if (s != NVJPEG_STATUS_SUCCESS) return NvjpegError("nvjpegDecodeParamsCreate", s);
    int not_supported = 1;  // nvJPEG: 0 means supported
    s = api_.nvjpegDecodeParamsSetROI(params, x, y, w, h);
    if (s == NVJPEG_STATUS_SUCCESS) {
      s = api_.nvjpegDecodeBatchedSupportedEx(hardware_.handle, parsed_, params, &not_supported);
    }
    api_.nvjpegDecodeParamsDestroy(params);
    if (s != NVJPEG_STATUS_SUCCESS) {
      return NvjpegError("nvjpegDecodeParamsSetROI / nvjpegDecodeBatchedSupportedEx", s);
    }
    return not_supported == 0;
  }

  Status DecodeBatched(JpegBackend backend, std::span<const std::string_view> bitstreams,
                       std::span<DeviceTensor> outputs, Stream& stream) override {
    Backend& backend_state = backend == JpegBackend::kHardware ? hardware_ : hybrid_;
    if (backend == JpegBackend::kCpu || backend_state.handle == nullptr ||
        bitstreams.size() != outputs.size() || bitstreams.empty()) {
      return Status::InvalidArgument("nvJPEG engine: bad batched call");
    }
    ScopedDevice device(ordinal_);
    SLUICE_RETURN_IF_ERROR(device.status());
    const int slot = backend_state.ring.Take();
    DecodeState& b = backend_state.states[static_cast<size_t>(slot)];
    if (backend_state.ring.pending(slot)) {
      backend_state.ring.set_pending(slot, false);
      const cudaError_t q = cudaEventQuery(b.done);
      if (q == cudaErrorNotReady) {
        ++state_waits_;
      } else if (q != cudaSuccess) {
        return CudaStatus(q, "cudaEventQuery of the state's last nvJPEG batch");
      }
      SLUICE_RETURN_IF_ERROR(
          CudaStatus(cudaEventSynchronize(b.done), "waiting for the state's last nvJPEG batch"));
    }
    const nvjpegHandle_t handle = backend_state.handle;
    const int n = static_cast<int>(bitstreams.size());
    if (b.initialized_batch != n) {
      const int threads = backend == JpegBackend::kHardware ? 1 : hybrid_cpu_threads_;
      const nvjpegStatus_t s =
          api_.nvjpegDecodeBatchedInitialize(handle, b.state, n, threads, NVJPEG_OUTPUT_RGBI);
      if (s != NVJPEG_STATUS_SUCCESS) {
        b.initialized_batch = -1;
        return NvjpegError("nvjpegDecodeBatchedInitialize", s);
      }
      b.initialized_batch = n;
    }
    data_.clear();
    lengths_.clear();
    images_.assign(bitstreams.size(), nvjpegImage_t{});
    for (size_t i = 0; i < bitstreams.size(); ++i) {
      data_.push_back(reinterpret_cast<const unsigned char*>(bitstreams[i].data()));
      lengths_.push_back(bitstreams[i].size());
      images_[i].channel[0] = static_cast<unsigned char*>(outputs[i].raw_data());
      images_[i].pitch[0] = static_cast<size_t>(outputs[i].shape().dim(1)) * 3;
    }
    const nvjpegStatus_t s =
        api_.nvjpegDecodeBatched(handle, b.state, data_.data(), lengths_.data(), images_.data(),
                                 static_cast<cudaStream_t>(stream.native_handle()));
    if (s != NVJPEG_STATUS_SUCCESS) {
      b.initialized_batch = -1;  // a failed batch is reset by initializing again
      return NvjpegError("nvjpegDecodeBatched(" + std::string(JpegBackendName(backend)) + ", " +
                             std::to_string(n) + " images)",
                         s);
    }
    SLUICE_RETURN_IF_ERROR(
        CudaStatus(cudaEventRecord(b.done, static_cast<cudaStream_t>(stream.native_handle())),
                   "cudaEventRecord after nvjpegDecodeBatched"));
    backend_state.ring.set_pending(slot, true);
    return Status::OK();
  }

 private:
  // nvjpegJpegStateCreate for each of the backend's states.
  nvjpegStatus_t CreateStates(Backend& b) {
    for (DecodeState& d : b.states) {
      const nvjpegStatus_t s = api_.nvjpegJpegStateCreate(b.handle, &d.state);
      if (s != NVJPEG_STATUS_SUCCESS) return s;
    }
    return NVJPEG_STATUS_SUCCESS;
  }

  const Api& api_;
  Stream& stream_;
  const int ordinal_;
  const int hybrid_cpu_threads_;
  Backend hardware_;
  Backend hybrid_;
  nvjpegJpegStream_t parsed_ = nullptr;  // Route's header parses (hardware handle)
  bool has_hardware_ = false;
  int64_t state_waits_ = 0;
  std::vector<const unsigned char*> data_;
  std::vector<size_t> lengths_;
  std::vector<nvjpegImage_t> images_;
};

}  // namespace

Result<std::unique_ptr<JpegEngine>> NewNvjpegEngine(Stream& stream, int /*max_batch*/,
                                                    int hybrid_cpu_threads, int states) {
  SLUICE_RETURN_IF_ERROR(GetLibrary().status);
  if (stream.device().is_cpu()) {
    return Status::InvalidArgument("nvJPEG engine: " + stream.device().ToString() +
                                   " is not a GPU");
  }
  SLUICE_ASSIGN_OR_RETURN(const DeviceRuntime* runtime, GetDeviceRuntime(stream.device()));
  auto engine =
      std::make_unique<NvjpegEngine>(stream, runtime->cuda_ordinal, hybrid_cpu_threads, states);
  SLUICE_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<JpegEngine>(std::move(engine));
}

}  // namespace sluice::gpu_internal

namespace sluice::gpu {

Status NvjpegAvailability() { return gpu_internal::GetLibrary().status; }

}  // namespace sluice::gpu

#else  // !SLUICE_HAVE_NVJPEG

namespace sluice::gpu {
namespace {
Status NotBuilt() {
  return Status::Unavailable(
      "sluice was built without nvjpeg.h: run scripts/fetch-nvjpeg.sh and reconfigure");
}
}  // namespace

Status NvjpegAvailability() { return NotBuilt(); }

}  // namespace sluice::gpu

namespace sluice::gpu_internal {
Result<std::unique_ptr<JpegEngine>> NewNvjpegEngine(gpu::Stream&, int, int, int) {
  return gpu::NvjpegAvailability();
}
}  // namespace sluice::gpu_internal

#endif  // SLUICE_HAVE_NVJPEG
