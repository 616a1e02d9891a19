// The two backends behind gpu/stream.h: host streams (one worker thread per
// stream running memcpy's and host functions in order) and CUDA streams.
// NewStream/NewEvent (stream.cc) pick one by the Device.
#ifndef SLUICE_GPU_INTERNAL_STREAM_BACKENDS_H_
#define SLUICE_GPU_INTERNAL_STREAM_BACKENDS_H_

#include <memory>

#include "sluice/core/result.h"
#include "sluice/gpu/stream.h"

namespace sluice::gpu::internal {

std::unique_ptr<Stream> NewHostStream();
std::unique_ptr<Event> NewHostEvent();

// On the GPU with this CUDA ordinal; `device` is the logical device named
// in messages and returned by device().
Result<std::unique_ptr<Stream>> NewCudaStream(const Device& device, int cuda_ordinal);
Result<std::unique_ptr<Event>> NewCudaEvent(const Device& device, int cuda_ordinal);

}  // namespace sluice::gpu::internal

#endif  // SLUICE_GPU_INTERNAL_STREAM_BACKENDS_H_
