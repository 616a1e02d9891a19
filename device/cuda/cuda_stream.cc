// The CUDA backend of device/stream.h: non-blocking cudaStream_t, cudaEvent_t
// without timing, cudaMemcpyAsync, cudaLaunchHostFunc. Every call makes the
// stream's GPU current for its duration and turns errors into Status.
#include <fmt/format.h>

#include <utility>

#include "sluice/device/cuda/cuda_error.h"
#include "sluice/device/internal/stream_backends.h"

namespace sluice::gpu_internal {

// Names from the public gpu API used below.
using gpu::CopyDirection;
using gpu::Event;
using gpu::Graph;
using gpu::Stream;
using gpu::StreamId;

namespace {

cudaMemcpyKind ToCuda(CopyDirection direction) {
  switch (direction) {
    case CopyDirection::kHostToDevice: return cudaMemcpyHostToDevice;
    case CopyDirection::kDeviceToHost: return cudaMemcpyDeviceToHost;
    case CopyDirection::kDeviceToDevice: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

class CudaEvent final : public Event {
 public:
  CudaEvent(Device device, int ordinal, cudaEvent_t event)
      : device_(device), ordinal_(ordinal), event_(event) {}
  ~CudaEvent() override {
    ScopedDevice scope(ordinal_);
    (void)CudaStatus(cudaEventDestroy(event_), "cudaEventDestroy");
  }

  Result<bool> Query() override {
    cudaError_t err = cudaEventQuery(event_);
    if (err == cudaErrorNotReady) {
      cudaGetLastError();  // "not ready" is an answer, not an error to keep
      return false;
    }
    SLUICE_RETURN_IF_ERROR(CudaStatus(err, Where("cudaEventQuery")));
    return true;
  }
  Status Synchronize() override {
    return CudaStatus(cudaEventSynchronize(event_), Where("cudaEventSynchronize"));
  }
  const Device& device() const override { return device_; }
  void* native_handle() const override { return event_; }

  int ordinal() const { return ordinal_; }
  cudaEvent_t event() const { return event_; }

 private:
  std::string Where(const char* call) const {
    return fmt::format("{}: {}", device_.ToString(), call);
  }
  const Device device_;
  const int ordinal_;
  const cudaEvent_t event_;
};

// A captured cudaGraph_t and its executable instance.
class CudaGraph final : public Graph {
 public:
  CudaGraph(Device device, int ordinal, cudaGraph_t graph, cudaGraphExec_t exec, int64_t nodes)
      : device_(device), ordinal_(ordinal), graph_(graph), exec_(exec), nodes_(nodes) {}
  ~CudaGraph() override {
    ScopedDevice scope(ordinal_);
    (void)CudaStatus(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
    (void)CudaStatus(cudaGraphDestroy(graph_), "cudaGraphDestroy");
  }
  Status Launch(Stream& stream) override {
    if (stream.device() != device_) {
      return Status::InvalidArgument(fmt::format("a graph captured on {} cannot launch on {}",
                                                 device_.ToString(), stream.device().ToString()));
    }
    ScopedDevice scope(ordinal_);
    SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device_.ToString()));
    return CudaStatus(cudaGraphLaunch(exec_, static_cast<cudaStream_t>(stream.native_handle())),
                      device_.ToString() + ": cudaGraphLaunch");
  }
  int64_t num_nodes() const override { return nodes_; }

 private:
  const Device device_;
  const int ordinal_;
  const cudaGraph_t graph_;
  const cudaGraphExec_t exec_;
  const int64_t nodes_;
};

class CudaStream final : public Stream {
 public:
  CudaStream(Device device, int ordinal, cudaStream_t stream)
      : device_(device), ordinal_(ordinal), stream_(stream) {}
  ~CudaStream() override {
    ScopedDevice scope(ordinal_);
    (void)CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    (void)CudaStatus(cudaStreamDestroy(stream_), "cudaStreamDestroy");
  }

  const Device& device() const override { return device_; }
  void* native_handle() const override { return stream_; }
  StreamId id() const override { return reinterpret_cast<StreamId>(stream_); }

  Status CopyAsync(void* dst, const void* src, size_t bytes, CopyDirection direction) override {
    if (bytes == 0) return Status::OK();
    ScopedDevice scope(ordinal_);
    SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device_.ToString()));
    return CudaStatus(cudaMemcpyAsync(dst, src, bytes, ToCuda(direction), stream_),
                      fmt::format("{}: cudaMemcpyAsync({} bytes)", device_.ToString(), bytes));
  }

  Status LaunchHostFunc(std::function<void()> fn) override {
    auto* heap = new std::function<void()>(std::move(fn));
    ScopedDevice scope(ordinal_);
    Status status = scope.status().WithContext(device_.ToString());
    if (status.ok()) {
      status = CudaStatus(cudaLaunchHostFunc(stream_, &RunAndDelete, heap),
                          device_.ToString() + ": cudaLaunchHostFunc");
    }
    if (!status.ok()) delete heap;
    return status;
  }

  Status Record(Event& event) override {
    if (capturing()) return WhileCapturing("Record");
    auto* cuda = dynamic_cast<CudaEvent*>(&event);
    if (cuda == nullptr || cuda->ordinal() != ordinal_) {
      return Status::InvalidArgument(fmt::format("{} stream: cannot record an event of {}",
                                                 device_.ToString(), event.device().ToString()));
    }
    ScopedDevice scope(ordinal_);
    SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device_.ToString()));
    return CudaStatus(cudaEventRecord(cuda->event(), stream_),
                      device_.ToString() + ": cudaEventRecord");
  }

  Status WaitFor(const Event& event) override {
    if (capturing()) return WhileCapturing("WaitFor");
    auto* cuda = dynamic_cast<const CudaEvent*>(&event);
    if (cuda == nullptr) {
      return Status::InvalidArgument(fmt::format("{} stream: cannot wait for an event of {}",
                                                 device_.ToString(), event.device().ToString()));
    }
    ScopedDevice scope(ordinal_);
    SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device_.ToString()));
    return CudaStatus(cudaStreamWaitEvent(stream_, cuda->event(), 0),
                      device_.ToString() + ": cudaStreamWaitEvent");
  }

  Status Synchronize() override {
    if (capturing()) return WhileCapturing("Synchronize");
    return CudaStatus(cudaStreamSynchronize(stream_),
                      device_.ToString() + ": cudaStreamSynchronize");
  }

  Status BeginCapture() override {
    if (capturing()) {
      return Status::FailedPrecondition(device_.ToString() + " stream: already capturing a graph");
    }
    ScopedDevice scope(ordinal_);
    SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device_.ToString()));
    return CudaStatus(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed),
                      device_.ToString() + ": cudaStreamBeginCapture");
  }

  Result<std::unique_ptr<Graph>> EndCapture() override {
    if (!capturing()) {
      return Status::FailedPrecondition(device_.ToString() +
                                        " stream: EndCapture without BeginCapture");
    }
    ScopedDevice scope(ordinal_);
    SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device_.ToString()));
    cudaGraph_t graph = nullptr;
    SLUICE_RETURN_IF_ERROR(CudaStatus(cudaStreamEndCapture(stream_, &graph),
                                      device_.ToString() + ": cudaStreamEndCapture"));
    size_t nodes = 0;
    cudaGraphExec_t exec = nullptr;
    Status s = CudaStatus(cudaGraphGetNodes(graph, nullptr, &nodes),
                          device_.ToString() + ": cudaGraphGetNodes");
    if (s.ok()) {
      s = CudaStatus(cudaGraphInstantiate(&exec, graph, 0),
                     device_.ToString() + ": cudaGraphInstantiate");
    }
    if (!s.ok()) {
      (void)cudaGraphDestroy(graph);
      return s;
    }
    return std::unique_ptr<Graph>(
        new CudaGraph(device_, ordinal_, graph, exec, static_cast<int64_t>(nodes)));
  }

  bool capturing() const override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &status) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return status != cudaStreamCaptureStatusNone;
  }

 private:
  Status WhileCapturing(const char* call) const {
    return Status::FailedPrecondition(
        fmt::format("{} stream: {} while capturing a graph", device_.ToString(), call));
  }

  static void CUDART_CB RunAndDelete(void* user_data) {
    auto* fn = static_cast<std::function<void()>*>(user_data);
    (*fn)();
    delete fn;
  }

  const Device device_;
  const int ordinal_;
  const cudaStream_t stream_;
};

}  // namespace

Result<std::unique_ptr<Stream>> NewCudaStream(const Device& device, int cuda_ordinal) {
  ScopedDevice scope(cuda_ordinal);
  SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device.ToString()));
  cudaStream_t stream = nullptr;
  SLUICE_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                    device.ToString() + ": cudaStreamCreateWithFlags"));
  return std::unique_ptr<Stream>(new CudaStream(device, cuda_ordinal, stream));
}

Result<std::unique_ptr<Event>> NewCudaEvent(const Device& device, int cuda_ordinal) {
  ScopedDevice scope(cuda_ordinal);
  SLUICE_RETURN_IF_ERROR(scope.status().WithContext(device.ToString()));
  cudaEvent_t event = nullptr;
  SLUICE_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                    device.ToString() + ": cudaEventCreateWithFlags"));
  return std::unique_ptr<Event>(new CudaEvent(device, cuda_ordinal, event));
}

}  // namespace sluice::gpu_internal
