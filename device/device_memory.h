// Device memory for DeviceTensors (core/device_tensor.h): allocation from
// the device's caching allocator, stream-ordered reuse (RecordUse), and
// copies between host and device memory. A device is a GPU, or host memory
// standing in for one on cpu:0 (the host backend).
//
//   SLUICE_ASSIGN_OR_RETURN(auto stream, gpu::NewStream(Device::Gpu(0)));
//   SLUICE_ASSIGN_OR_RETURN(DeviceTensor d, gpu::CopyToDevice(host, *stream));
//   ... launch kernels on stream->native_handle() reading d.raw_data() ...
//   SLUICE_ASSIGN_OR_RETURN(Tensor back, gpu::CopyToHost(d, *stream));
//
// Ownership: a tensor's block goes back to its CachingAllocator when the
// last handle (or the last copy of storage()) is dropped. The block is
// allocated for one stream: the allocator reuses it for later requests on
// that stream only. For work queued on another stream, call RecordUse(t,
// that stream) after queuing it, and the block goes back only once that
// work has run (PyTorch's record_stream); without it, such work must have
// finished before the last handle is dropped. An explicitly given
// allocator must outlive every tensor made from it.
//
// Thread-safety: every function may be called from any thread.
#ifndef SLUICE_DEVICE_DEVICE_MEMORY_H_
#define SLUICE_DEVICE_DEVICE_MEMORY_H_

#include <memory>
#include <string>
#include <utility>

#include "sluice/core/device_tensor.h"
#include "sluice/core/dtype.h"
#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/core/tensor.h"
#include "sluice/device/caching_allocator.h"
#include "sluice/device/stream.h"

namespace sluice::gpu {

// Uninitialized memory from the device's allocator (gpu::GetDeviceAllocator
// for a GPU), for use on `stream` (the default stream when null).
// InvalidArgument for kString or a shape that is not fully defined;
// ResourceExhausted with the sizes when the device memory is exhausted;
// Unavailable/NotFound for a GPU that is not there.
Result<DeviceTensor> AllocateDeviceTensor(const Device& device, DType dtype, const Shape& shape,
                                          const Stream* stream = nullptr);
// The same from `allocator`, whose memory belongs to `device`.
Result<DeviceTensor> AllocateDeviceTensor(CachingAllocator& allocator, const Device& device,
                                          DType dtype, const Shape& shape, StreamId stream = 0);

// Marks the work queued on `stream` so far as using `t`: when its last
// handle drops, the memory returns to its allocator only after that work
// has run (CachingAllocator::FreeAfter; no thread waits). Call it after
// queuing the last use on a stream other than the one the tensor was
// allocated for. Records a new event on `stream` each call. Shared by all
// handles of the bytes; a no-op on a tensor not from AllocateDeviceTensor.
// InvalidArgument for a stream of another device.
Status RecordUse(const DeviceTensor& t, Stream& stream);
// The same with an event the caller recorded after the uses (one event
// can serve several tensors). REQUIRES: the event is on t's device.
void RecordUse(const DeviceTensor& t, std::shared_ptr<Event> recorded);
// The same for a tensor whose bytes are device memory (Tensor::device(),
// the elements of Dataset::prefetch_to_device).
Status RecordUse(const Tensor& t, Stream& stream);
void RecordUse(const Tensor& t, std::shared_ptr<Event> recorded);

// Queue a copy of dst.byte_size() bytes from host memory into `dst`, or of
// src.byte_size() bytes from `src` into host memory, on `stream` and return
// at once (see Stream::CopyAsync for how long the memory must stay valid).
// InvalidArgument if the tensor lives on another device than the stream.
Status CopyToDeviceAsync(const void* host_src, DeviceTensor& dst, Stream& stream);
Status CopyToHostAsync(const DeviceTensor& src, void* host_dst, Stream& stream);

// Blocking copies staged through the device's pinned pool: they return when
// the data has arrived. CopyToDevice allocates on `stream`'s device for
// `stream`. InvalidArgument for a string tensor.
Result<DeviceTensor> CopyToDevice(const Tensor& host, Stream& stream);
Result<Tensor> CopyToHost(const DeviceTensor& device, Stream& stream);

}  // namespace sluice::gpu

#endif  // SLUICE_DEVICE_DEVICE_MEMORY_H_
