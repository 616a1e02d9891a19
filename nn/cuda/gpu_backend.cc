// GpuBackend: construction, memory methods, waits and deferred errors, and
// the registration with nn (nn/cuda/cuda_backend.h).
#include "sluice/nn/cuda/internal/gpu_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

#include "sluice/device/config.h"
#include "sluice/device/physical_devices.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/kit/backend_checks.h"

namespace sluice::gpu {
namespace backend {

using nn::kit::CheckAllocate;
using nn::kit::CheckCopy;
using nn::kit::CheckCopyFromHost;
using nn::kit::CheckNumeric;
using nn::kit::Invalid;

GpuBackend::GpuBackend(const Device& device, Device nn_device)
    : device_(device), nn_device_(nn_device) {}

GpuBackend::~GpuBackend() {
  if (stream_ != nullptr) (void)stream_->Synchronize();
  for (std::shared_ptr<void>& s : state_) s.reset();  // library handles, before the stream
}

Result<std::unique_ptr<GpuBackend>> GpuBackend::Create(const Device& device, Device nn_device) {
  std::unique_ptr<GpuBackend> b(new GpuBackend(device, nn_device));
  SLUICE_RETURN_IF_ERROR(b->Init());
  return b;
}

Status GpuBackend::Init() {
  SLUICE_ASSIGN_OR_RETURN(stream_, NewStream(device_));
  SLUICE_ASSIGN_OR_RETURN(deferred_block_,
                          AllocateDeviceTensor(device_, DType::kInt64,
                                               Shape{sizeof(DeferredError) / 8}, stream_.get()));
  deferred_device_ = static_cast<DeferredError*>(deferred_block_.raw_data());
  static const DeferredError kClear;
  SLUICE_RETURN_IF_ERROR(
      stream_->CopyAsync(deferred_device_, &kClear, sizeof(kClear), CopyDirection::kHostToDevice));
  return stream_->Synchronize();
}

std::string GpuBackend::name() const {
  if (device_.is_cpu()) {
    return nn_device_.ToString() + " (gpu backend kernels on the host, cpu:0, 1 thread)";
  }
  std::string gpu_name = "CUDA";
  for (const LogicalDevice& l : ListLogicalDevices()) {
    if (l.index != device_.index()) continue;
    for (const PhysicalDevice& p : ListPhysicalDevices()) {
      if (p.index == l.physical_index) gpu_name = p.name;
    }
  }
  return fmt::format("{} ({})", nn_device_.ToString(), gpu_name);
}

void GpuBackend::SetNumThreads(int n) {
  num_threads_.store(std::max(1, n), std::memory_order_relaxed);
}

Result<DeviceTensor> GpuBackend::Allocate(DType dtype, const Shape& shape) {
  SLUICE_RETURN_IF_ERROR(CheckAllocate(dtype, shape));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor t,
                          AllocateDeviceTensor(device_, dtype, shape, stream_.get()));
  DeviceTensor d(nn_device_, t.storage());
  std::lock_guard lock(capture_mu_);
  if (capturing_) capture_keep_.push_back(d);
  return d;
}

Status GpuBackend::BeginCapture() {
  std::lock_guard lock(capture_mu_);
  if (capturing_) return Status::FailedPrecondition("CaptureNnStep: already capturing");
  SLUICE_RETURN_IF_ERROR(stream_->BeginCapture());
  capturing_ = true;
  return Status::OK();
}

Result<std::unique_ptr<Graph>> GpuBackend::EndCapture(std::vector<DeviceTensor>* kept) {
  std::lock_guard lock(capture_mu_);
  if (!capturing_) return Status::FailedPrecondition("CaptureNnStep: not capturing");
  capturing_ = false;
  *kept = std::move(capture_keep_);
  capture_keep_.clear();
  return stream_->EndCapture();
}

Result<DeviceTensor> GpuBackend::ToDevice(const Tensor& host) {
  SLUICE_RETURN_IF_ERROR(CheckNumeric("ToDevice", host.dtype()));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor d, Allocate(host.dtype(), host.shape()));
  SLUICE_RETURN_IF_ERROR(CopyFromHost(host, &d));
  return d;
}

Status GpuBackend::CopyFromHost(const Tensor& host, DeviceTensor* dst) {
  SLUICE_RETURN_IF_ERROR(CheckCopyFromHost(nn_device_, host, dst));
  if (dst->byte_size() == 0 || dst->raw_data() == host.raw_data()) return Status::OK();
  SLUICE_RETURN_IF_ERROR(stream_->CopyAsync(dst->raw_data(), host.raw_data(), dst->byte_size(),
                                            CopyDirection::kHostToDevice));
  // The copy may run after this returns (always on the host device, and
  // from pinned memory on a GPU): the host bytes stay alive until it has.
  return stream_->LaunchHostFunc([keep = host] { (void)keep; });
}

Result<Tensor> GpuBackend::ToHost(const DeviceTensor& x) {
  if (x.device() != nn_device_) {
    return Invalid("ToHost", "x is not on " + nn_device_.ToString(), {{"x", &x}});
  }
  SLUICE_RETURN_IF_ERROR(CheckNumeric("ToHost", x.dtype()));
  SLUICE_ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(x.dtype(), x.shape()));
  SLUICE_RETURN_IF_ERROR(CopyToHostAndWait(x.raw_data(), host.raw_data(), host.byte_size()));
  return host;
}

Status GpuBackend::Copy(const DeviceTensor& src, DeviceTensor* dst) {
  SLUICE_RETURN_IF_ERROR(CheckCopy(nn_device_, src, dst));
  if (dst->byte_size() == 0 || dst->raw_data() == src.raw_data()) return Status::OK();
  return stream_->CopyAsync(dst->raw_data(), src.raw_data(), dst->byte_size(),
                            CopyDirection::kDeviceToDevice);
}

Status GpuBackend::Synchronize() { return CopyToHostAndWait(nullptr, nullptr, 0); }

Status GpuBackend::CopyToHostAndWait(const void* device_src, void* host_dst, size_t bytes) {
  if (stream_->capturing()) {
    return Status::FailedPrecondition(
        "a call that waits for the device (ToHost, Synchronize, Sum, CountArgMaxMatches) inside "
        "a captured step: read results after Replay()");
  }
  std::lock_guard lock(wait_mu_);
  if (bytes > 0) {
    SLUICE_RETURN_IF_ERROR(
        stream_->CopyAsync(host_dst, device_src, bytes, CopyDirection::kDeviceToHost));
  }
  return WaitAndCheck();
}

Status GpuBackend::WaitAndCheck() {
  SLUICE_RETURN_IF_ERROR(stream_->CopyAsync(&deferred_host_, deferred_device_,
                                            sizeof(DeferredError), CopyDirection::kDeviceToHost));
  SLUICE_RETURN_IF_ERROR(stream_->Synchronize());
  const DeferredError found = deferred_host_;
  if (found.code == DeferredError::kNone) return Status::OK();
  static const DeferredError kClear;
  SLUICE_RETURN_IF_ERROR(
      stream_->CopyAsync(deferred_device_, &kClear, sizeof(kClear), CopyDirection::kHostToDevice));
  SLUICE_RETURN_IF_ERROR(stream_->Synchronize());
  switch (found.code) {
    case DeferredError::kClassIdOutOfRange:
      return Status::InvalidArgument(fmt::format(
          "CrossEntropy: label {} in row {} is outside [0, {}) (found by the kernel on {}; "
          "reported at the next wait)",
          found.value, found.row, found.limit, nn_device_.ToString()));
    default:
      return Status::Internal(fmt::format("a kernel on {} recorded the unknown error code {}",
                                          nn_device_.ToString(), found.code));
  }
}

namespace {

// A recorded graph and the tensors it reads and writes.
class CapturedStep final : public nn::CapturedWork {
 public:
  CapturedStep(Stream* stream, std::unique_ptr<Graph> graph, std::vector<DeviceTensor> kept)
      : stream_(stream), graph_(std::move(graph)), kept_(std::move(kept)) {}
  Status Replay() override { return graph_->Launch(*stream_); }
  int64_t num_nodes() const override { return graph_->num_nodes(); }

 private:
  Stream* stream_;
  std::unique_ptr<Graph> graph_;
  std::vector<DeviceTensor> kept_;
};

}  // namespace

Result<std::unique_ptr<nn::CapturedWork>> GpuBackend::Capture(const std::function<Status()>& fn) {
  SLUICE_RETURN_IF_ERROR(BeginCapture());
  const Status ran = fn();
  std::vector<DeviceTensor> kept;
  Result<std::unique_ptr<Graph>> graph = EndCapture(&kept);
  if (!ran.ok()) {
    return Status(ran.code(), "capturing: the captured work failed: " + std::string(ran.message()));
  }
  if (!graph.ok()) return graph.status();
  return std::unique_ptr<nn::CapturedWork>(
      new CapturedStep(stream_.get(), std::move(*graph), std::move(kept)));
}

}  // namespace backend

Result<std::unique_ptr<nn::Backend>> NewNnBackend(const Device& device, Device as) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<backend::GpuBackend> b,
                          backend::GpuBackend::Create(device, as));
  return std::unique_ptr<nn::Backend>(std::move(b));
}

Result<std::unique_ptr<nn::Backend>> NewNnBackend(const Device& device) {
  return NewNnBackend(device, device);
}

Result<Stream*> NnBackendStream(nn::Backend& backend) {
  auto* b = dynamic_cast<backend::GpuBackend*>(&backend);
  if (b == nullptr) {
    return Status::InvalidArgument("NnBackendStream: " + backend.name() +
                                   " is not a GPU backend (gpu::NewNnBackend)");
  }
  return &b->stream();
}

Result<std::unique_ptr<CapturedNnStep>> CaptureNnStep(nn::Backend& backend,
                                                      const std::function<Status()>& step) {
  return backend.Capture(step);
}

void RegisterNnBackend() {
  static std::once_flag once;
  std::call_once(once, [] {
    nn::RegisterBackendFactory(DeviceKind::kGpu,
                               [](Device d) { return NewNnBackend(Device::Gpu(d.index())); });
    nn::RegisterBatchFeed(DeviceKind::kGpu, backend::MakePrefetchFeed);
  });
}

void RegisterNnBackendOnHost() {
  RegisterNnBackend();  // so a later RegisterNnBackend (e.g. on load) cannot replace this one
  nn::RegisterBackendFactory(DeviceKind::kGpu, [](Device d) {
    return NewNnBackend(Device::Cpu(), Device::Gpu(d.index()));
  });
}

namespace {
// Registers on load when this file is linked in (shared library, or a
// binary that refers to anything here).
const bool kRegisteredOnLoad = (RegisterNnBackend(), true);
}  // namespace

}  // namespace sluice::gpu
