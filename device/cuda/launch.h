// Enqueue: queues one kernel launch (or its host loop) on a Stream. Shared
// by the image ops and the nn backend. Internal.
#ifndef SLUICE_DEVICE_CUDA_LAUNCH_H_
#define SLUICE_DEVICE_CUDA_LAUNCH_H_

#include <string>
#include <string_view>

#include "sluice/core/status.h"
#include "sluice/device/cuda/cuda_error.h"
#include "sluice/device/runtime.h"
#include "sluice/device/cuda/kernel_types.h"
#include "sluice/device/stream.h"

namespace sluice::gpu_internal {

// Queues run(target) on `stream`: `run` launches its kernels on
// target.cuda_stream now, with the stream's GPU current, and returns the
// cudaError_t of the launch; on the host device it runs later as a host
// function of the stream, with a null target (a host loop), and its result
// is ignored. `run` must hold its arguments by value. `what` names the
// launch in a CUDA error ("gpu::Resize kernel").
template <typename Run>
Status Enqueue(gpu::Stream& stream, std::string_view what, Run run) {
  if (stream.device().is_cpu()) {
    return stream.LaunchHostFunc([run] { (void)run(KernelTarget{}); });
  }
  SLUICE_ASSIGN_OR_RETURN(const DeviceRuntime* runtime, GetDeviceRuntime(stream.device()));
  ScopedDevice scope(runtime->cuda_ordinal);
  SLUICE_RETURN_IF_ERROR(scope.status());
  const int err = run(KernelTarget{stream.native_handle()});
  return CudaStatus(static_cast<cudaError_t>(err), std::string(what));
}

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_CUDA_LAUNCH_H_
