// DeviceTensor: a dense numeric tensor in a device's memory (a GPU's, or
// host memory for the "/cpu:0" device), and copies between it and the host.
//
//   SLUICE_ASSIGN_OR_RETURN(auto stream, gpu::NewStream(gpu::Device::Gpu(0)));
//   SLUICE_ASSIGN_OR_RETURN(gpu::DeviceTensor d, gpu::CopyToDevice(host, *stream));
//   ... launch kernels on stream->native_handle() reading d.data() ...
//   SLUICE_ASSIGN_OR_RETURN(Tensor back, gpu::CopyToHost(d, *stream));
//
// Ownership: a DeviceTensor is a cheap handle; copies share one block of
// device memory, which goes back to its CachingAllocator when the last
// handle (or the last copy of storage()) is dropped. The block is allocated for one stream (the
// allocator reuses it for later requests on that stream only); for work queued on another stream,
// call RecordUse(that stream) after queuing it, and the block goes back only once that work has
// run (PyTorch's record_stream). Without it, such work must have finished before the last handle
// is dropped. An explicitly given allocator must
// outlive every tensor made from it. Thread-safety: const methods may be called concurrently; the
// bytes are as safe as any memory shared by several streams.
#ifndef SLUICE_GPU_DEVICE_TENSOR_H_
#define SLUICE_GPU_DEVICE_TENSOR_H_

#include <memory>
#include <string>
#include <utility>

#include "sluice/core/dtype.h"
#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"
#include "sluice/gpu/caching_allocator.h"
#include "sluice/gpu/stream.h"

namespace sluice::gpu {

class DeviceTensor {
 public:
  // float32[0] on /cpu:0, with no memory.
  DeviceTensor() = default;

  // Uninitialized memory from the device's allocator (gpu::GetDeviceAllocator
  // for a GPU), for use on `stream` (the default stream when null).
  // InvalidArgument for kString or a shape that is not fully defined;
  // ResourceExhausted with the sizes when the device memory is exhausted;
  // Unavailable/NotFound for a GPU that is not there.
  static Result<DeviceTensor> Allocate(const Device& device, DType dtype, const Shape& shape,
                                       const Stream* stream = nullptr);
  // The same from `allocator`, whose memory belongs to `device`.
  static Result<DeviceTensor> Allocate(CachingAllocator& allocator, const Device& device,
                                       DType dtype, const Shape& shape, StreamId stream = 0);

  DType dtype() const { return storage_.dtype(); }
  const Shape& shape() const { return storage_.shape(); }
  int64_t num_elements() const { return storage_.num_elements(); }
  size_t byte_size() const { return storage_.byte_size(); }
  const Device& device() const { return device_; }
  // Device memory (a host pointer on /cpu:0); null when empty.
  void* data() const { return const_cast<void*>(storage_.raw_data()); }
  // The bytes as a sluice::Tensor whose Buffer wraps the device block (the
  // representation nn::DeviceTensor adopts: nn::DeviceTensor(nn::Device::Gpu(i),
  // t.storage())). On a GPU its data is device memory: never read it on the host.
  const Tensor& storage() const { return storage_; }

  // "float32[2,3] on /gpu:0".
  std::string DebugString() const;

  // Marks the work queued on `stream` so far as using this tensor: when the
  // last handle drops, the memory returns to its allocator only after that
  // work has run (CachingAllocator::FreeAfter; no thread waits). Call it
  // after queuing the last use on a stream other than the one the tensor
  // was allocated for. Records a new event on `stream` each call. Shared by
  // all copies of the handle; a no-op on an empty tensor.
  // InvalidArgument for a stream of another device.
  Status RecordUse(Stream& stream) const;
  // The same with an event the caller recorded after the uses (one event
  // can serve several tensors). REQUIRES: the event is on this device.
  void RecordUse(std::shared_ptr<Event> recorded) const;

 private:
  struct Uses;  // the events recorded so far; shared with the block's deleter
  DeviceTensor(Device device, Tensor storage, std::shared_ptr<Uses> uses)
      : storage_(std::move(storage)), device_(device), uses_(std::move(uses)) {}
  Tensor storage_;
  Device device_;
  std::shared_ptr<Uses> uses_;
};

// Queue a copy of dst.byte_size() bytes from host memory into `dst`, or of
// src.byte_size() bytes from `src` into host memory, on `stream` and return
// at once (see Stream::CopyAsync for how long the memory must stay valid).
// InvalidArgument if the tensor lives on another device than the stream.
Status CopyToDeviceAsync(const void* host_src, const DeviceTensor& dst, Stream& stream);
Status CopyToHostAsync(const DeviceTensor& src, void* host_dst, Stream& stream);

// Blocking copies staged through the device's pinned pool: they return when
// the data has arrived. CopyToDevice allocates on `stream`'s device for
// `stream`. InvalidArgument for a string tensor.
Result<DeviceTensor> CopyToDevice(const Tensor& host, Stream& stream);
Result<Tensor> CopyToHost(const DeviceTensor& device, Stream& stream);

}  // namespace sluice::gpu

#endif  // SLUICE_GPU_DEVICE_TENSOR_H_
