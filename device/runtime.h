// DeviceRuntime: what a Device needs at run time: its memory allocator, the
// pinned pool that stages copies to it, and (for a GPU) its CUDA ordinal.
// Made on first use and never destroyed (allocators must not free memory
// after the CUDA driver has shut down). Thread-safe.
#ifndef SLUICE_DEVICE_RUNTIME_H_
#define SLUICE_DEVICE_RUNTIME_H_

#include "sluice/core/result.h"
#include "sluice/device/caching_allocator.h"
#include "sluice/device/pinned_host_pool.h"
#include "sluice/device/stream.h"

namespace sluice::gpu_internal {

struct DeviceRuntime {
  Device device;
  int cuda_ordinal = -1;                       // -1 for the host device
  gpu::CachingAllocator* allocator = nullptr;  // device memory
  gpu::PinnedHostPool staging;                 // cudaHostAlloc for GPUs, heap for the host
};

// OK for cpu:0; InvalidArgument for another cpu:N (the host backend is one device).
Status CheckHostDevice(const Device& device);
// The host device's runtime always exists. For "gpu:i": Unavailable with
// GpuAvailability()'s reason when no GPU is usable, NotFound when there is
// no logical device i.
Result<const DeviceRuntime*> GetDeviceRuntime(const Device& device);

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_RUNTIME_H_
