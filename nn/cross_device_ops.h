// CrossDeviceOps: how replicas average their gradients and share their
// weights (tf.distribute's cross-device ops).
//
// One object per replica, all built over the same Communicator group (one
// rank per replica in sync). Every replica calls the same methods with
// tensors of the same dtypes and shapes, in the same order.
//
// Built in: the host implementation, which reduces through the
// Communicator in fused buckets (25 MB by default, as DDP and Horovod):
// tensors on the CPU are reduced where they lie (a bucket of several is
// packed into one buffer first); tensors on another device are copied to
// the host and back. It serves every device, and is the fallback where a
// device library cannot run (NCCL refuses two replicas on one GPU, so
// logical devices of one GPU use it). Device modules register faster ones
// (gpu/ registers NCCL for GPUs) with RegisterCrossDeviceOps.
//
// Thread-safety: one thread per object (its replica's).
#ifndef SLUICE_NN_CROSS_DEVICE_OPS_H_
#define SLUICE_NN_CROSS_DEVICE_OPS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "sluice/distribute/communicator.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/device_tensor.h"

namespace sluice::nn {

class CrossDeviceOps {
 public:
  virtual ~CrossDeviceOps() = default;
  // "host (MPI (Open MPI v4.1.4), rank 0 of 2), buckets of 25 MB".
  virtual std::string name() const = 0;
  // Replaces every tensor (float32 or float64) with its mean over the
  // replicas. The result is the same on every replica, bit for bit.
  virtual Status AllReduceMean(std::span<DeviceTensor* const> tensors) = 0;
  // Makes every tensor equal to replica `root`'s (any numeric dtype).
  virtual Status Broadcast(std::span<DeviceTensor* const> tensors, int root) = 0;
  // Bytes moved by AllReduceMean so far (per replica), for benchmarks.
  virtual int64_t bytes_reduced() const = 0;
};

struct CrossDeviceOptions {
  // Gradients are fused into buckets of at most this many bytes (a tensor
  // larger than a bucket goes alone).
  size_t bucket_bytes = size_t{25} << 20;
};

// The host implementation over `comm` for tensors of `backend`'s device.
// `comm` must outlive it.
std::unique_ptr<CrossDeviceOps> MakeHostCrossDeviceOps(Backend& backend, Communicator& comm,
                                                       CrossDeviceOptions options = {});

// For device modules: makes the ops of a device kind (called once per
// replica, from its thread; all replicas of a group at once, as NCCL's
// initialization needs). Returning nullptr falls back to the host ops.
using CrossDeviceOpsFactory = std::function<Result<std::unique_ptr<CrossDeviceOps>>(
    Backend&, Communicator&, const CrossDeviceOptions&)>;
void RegisterCrossDeviceOps(DeviceKind kind, CrossDeviceOpsFactory factory);

// The registered ops for the backend's device kind, else the host ops.
Result<std::unique_ptr<CrossDeviceOps>> MakeCrossDeviceOps(Backend& backend, Communicator& comm,
                                                           CrossDeviceOptions options = {});

}  // namespace sluice::nn

#endif  // SLUICE_NN_CROSS_DEVICE_OPS_H_
