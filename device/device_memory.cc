#include "sluice/device/device_memory.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include "sluice/device/runtime.h"

namespace sluice::gpu {

namespace {

// The events of the streams that used a block, besides the one it was
// allocated for; shared by the tensor's handles and the block's deleter.
struct BlockUses final : DeviceMemoryUses {
  std::mutex mu;
  std::vector<std::shared_ptr<Event>> events;
};

}  // namespace

Result<DeviceTensor> AllocateDeviceTensor(const Device& device, DType dtype, const Shape& shape,
                                          const Stream* stream) {
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(device));
  return AllocateDeviceTensor(*runtime->allocator, device, dtype, shape, stream ? stream->id() : 0);
}

Result<DeviceTensor> AllocateDeviceTensor(CachingAllocator& allocator, const Device& device,
                                          DType dtype, const Shape& shape, StreamId stream) {
  if (dtype == DType::kString) {
    return Status::InvalidArgument(fmt::format(
        "{}: device tensors hold numbers; a string tensor stays on the host", device.ToString()));
  }
  std::optional<int64_t> n = shape.CheckedNumElements();
  if (!n.has_value() ||
      *n > static_cast<int64_t>(std::numeric_limits<int64_t>::max() / DTypeSize(dtype))) {
    return Status::InvalidArgument(fmt::format("{}: cannot allocate a {} tensor of shape {}",
                                               device.ToString(), DTypeName(dtype),
                                               shape.ToString()));
  }
  const size_t bytes = static_cast<size_t>(*n) * DTypeSize(dtype);
  SLUICE_ASSIGN_OR_RETURN(void* data, allocator.Allocate(bytes, stream));
  CachingAllocator* owner = &allocator;
  auto uses = std::make_shared<BlockUses>();
  // Neither call can fail: `data` is a live block of `owner`.
  Buffer buffer = Buffer::WrapDevice(
      data, bytes,
      [owner, data, uses] {
        std::vector<std::shared_ptr<Event>> events;
        {
          std::lock_guard lock(uses->mu);
          events.swap(uses->events);
        }
        if (events.empty()) {
          (void)owner->Free(data);
        } else {
          (void)owner->FreeAfter(data, std::move(events));
        }
      },
      device, uses);
  SLUICE_ASSIGN_OR_RETURN(Tensor storage, Tensor::FromBuffer(dtype, shape, std::move(buffer)));
  return DeviceTensor(device, std::move(storage));
}

Status RecordUse(const Tensor& t, Stream& stream) {
  if (stream.device() != t.device()) {
    return Status::InvalidArgument(fmt::format(
        "RecordUse: a tensor on {} ({}{}) cannot be used on a {} stream", t.device().ToString(),
        DTypeName(t.dtype()), t.shape().ToString(), stream.device().ToString()));
  }
  if (dynamic_cast<BlockUses*>(t.buffer().device_uses()) == nullptr) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Event> event, NewEvent(t.device()));
  SLUICE_RETURN_IF_ERROR(stream.Record(*event));
  RecordUse(t, std::shared_ptr<Event>(std::move(event)));
  return Status::OK();
}

void RecordUse(const Tensor& t, std::shared_ptr<Event> recorded) {
  auto* uses = dynamic_cast<BlockUses*>(t.buffer().device_uses());
  if (uses == nullptr || recorded == nullptr) return;
  std::lock_guard lock(uses->mu);
  uses->events.push_back(std::move(recorded));
}

Status RecordUse(const DeviceTensor& t, Stream& stream) {
  if (stream.device() != t.device()) {
    return Status::InvalidArgument(fmt::format("RecordUse: {} cannot be used on a {} stream",
                                               t.DebugString(), stream.device().ToString()));
  }
  return RecordUse(t.storage(), stream);
}

void RecordUse(const DeviceTensor& t, std::shared_ptr<Event> recorded) {
  RecordUse(t.storage(), std::move(recorded));
}

namespace {

Status CheckSameDevice(const DeviceTensor& t, const Stream& stream) {
  if (t.device() == stream.device()) return Status::OK();
  return Status::InvalidArgument(fmt::format("a tensor on {} cannot be copied on a {} stream",
                                             t.device().ToString(), stream.device().ToString()));
}

Status CheckNumeric(const Tensor& t) {
  if (t.dtype() != DType::kString) return Status::OK();
  return Status::InvalidArgument("cannot copy a string tensor " + t.shape().ToString() +
                                 " to a device");
}

}  // namespace

Status CopyToDeviceAsync(const void* host_src, DeviceTensor& dst, Stream& stream) {
  SLUICE_RETURN_IF_ERROR(CheckSameDevice(dst, stream));
  return stream.CopyAsync(dst.raw_data(), host_src, dst.byte_size(), CopyDirection::kHostToDevice);
}

Status CopyToHostAsync(const DeviceTensor& src, void* host_dst, Stream& stream) {
  SLUICE_RETURN_IF_ERROR(CheckSameDevice(src, stream));
  return stream.CopyAsync(host_dst, src.raw_data(), src.byte_size(), CopyDirection::kDeviceToHost);
}

Result<DeviceTensor> CopyToDevice(const Tensor& host, Stream& stream) {
  SLUICE_RETURN_IF_ERROR(CheckNumeric(host));
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(stream.device()));
  SLUICE_ASSIGN_OR_RETURN(
      DeviceTensor d, AllocateDeviceTensor(stream.device(), host.dtype(), host.shape(), &stream));
  PinnedHostPool staging = runtime->staging;
  SLUICE_ASSIGN_OR_RETURN(PinnedBuffer pinned, staging.Acquire(host.byte_size()));
  if (host.byte_size() > 0) std::memcpy(pinned.data(), host.raw_data(), host.byte_size());
  SLUICE_RETURN_IF_ERROR(CopyToDeviceAsync(pinned.data(), d, stream));
  SLUICE_RETURN_IF_ERROR(stream.Synchronize());  // before `pinned` goes back to the pool
  return d;
}

Result<Tensor> CopyToHost(const DeviceTensor& device, Stream& stream) {
  SLUICE_ASSIGN_OR_RETURN(const gpu_internal::DeviceRuntime* runtime,
                          gpu_internal::GetDeviceRuntime(stream.device()));
  SLUICE_ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(device.dtype(), device.shape()));
  PinnedHostPool staging = runtime->staging;
  SLUICE_ASSIGN_OR_RETURN(PinnedBuffer pinned, staging.Acquire(device.byte_size()));
  SLUICE_RETURN_IF_ERROR(CopyToHostAsync(device, pinned.data(), stream));
  SLUICE_RETURN_IF_ERROR(stream.Synchronize());
  if (host.byte_size() > 0) std::memcpy(host.raw_data(), pinned.data(), host.byte_size());
  return host;
}

}  // namespace sluice::gpu
