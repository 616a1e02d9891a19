// The two backends behind device/stream.h: host streams (one worker thread per
// stream running memcpy's and host functions in order) and CUDA streams.
// NewStream/NewEvent (stream.cc) pick one by the Device.
#ifndef SLUICE_DEVICE_INTERNAL_STREAM_BACKENDS_H_
#define SLUICE_DEVICE_INTERNAL_STREAM_BACKENDS_H_

#include <memory>

#include "sluice/core/result.h"
#include "sluice/device/stream.h"

namespace sluice::gpu_internal {

std::unique_ptr<gpu::Stream> NewHostStream();
std::unique_ptr<gpu::Event> NewHostEvent();

// On the GPU with this CUDA ordinal; `device` is the logical device named
// in messages and returned by device().
Result<std::unique_ptr<gpu::Stream>> NewCudaStream(const Device& device, int cuda_ordinal);
Result<std::unique_ptr<gpu::Event>> NewCudaEvent(const Device& device, int cuda_ordinal);

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_INTERNAL_STREAM_BACKENDS_H_
