// CrossDeviceOps: how replicas average their gradients and share their
// weights (tf.distribute's cross-device ops).
//
// One object per replica, all built over the same Communicator group (one
// rank per replica in sync). Every replica calls the same methods with
// tensors of the same dtypes and shapes, in the same order.
//
// Built in: the host implementation, which reduces through the
// Communicator in fused buckets (25 MB by default, as DDP and Horovod).
// Tensors on the CPU: a bucket of one tensor, or of tensors that lie one
// after another in memory (as Fit lays out gradients), is summed where it
// lies and divided by the replica count; the others are packed into a
// buffer kept across steps, summed, and copied back divided (optionally a
// piece of chunk_bytes at a time). The quotients are the Communicator's
// kMean's, bit for bit. Tensors on another device are copied to the host
// and back. It serves every device, and is the fallback where a
// device library cannot run (NCCL refuses two replicas on one GPU, so
// logical devices of one GPU use it). Device modules register faster ones
// (nn/cuda/ registers NCCL for GPUs) with RegisterCrossDeviceOps.
//
// Thread-safety: one thread per object (its replica's); the host ops'
// own thread touches only the tensors handed to Add().
#ifndef SLUICE_NN_CROSS_DEVICE_OPS_H_
#define SLUICE_NN_CROSS_DEVICE_OPS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sluice/core/device_tensor.h"
#include "sluice/distribute/communicator.h"
#include "sluice/nn/backend.h"

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

  // AllReduceMean in pieces, for a backward pass that makes gradients ready
  // a layer at a time: Add() hands tensors in the order they become ready,
  // Wait() returns once every tensor handed since the last Wait() holds its
  // mean (the first error, if any). The buckets are those AllReduceMean
  // would make of all the tensors in that order, so the results are the
  // same bit for bit. Ops that can (the host ops on the CPU with
  // CrossDeviceOptions::overlap) start a bucket as soon as it is full, on a
  // thread of their own, while the caller goes on; the default keeps the
  // tensors and reduces them all in Wait(). A tensor handed to Add() must
  // be neither read nor written until Wait() returns. Cancel() drops what
  // has not started and waits for what has (after an error, before the
  // tensors go away); call it after Abort() on the communicator, so that a
  // bucket waiting for the other replicas fails at once.
  virtual Status Add(std::span<DeviceTensor* const> ready);
  virtual Status Wait();
  virtual void Cancel();

 private:
  std::vector<DeviceTensor*> added_;  // the default Add()'s tensors
};

struct CrossDeviceOptions {
  // Gradients are fused into buckets of at most this many bytes (a tensor
  // larger than a bucket goes alone).
  size_t bucket_bytes = size_t{25} << 20;
  // The first bucket of a reduction holds at most this many bytes (DDP's
  // rule): with overlap, the last layers' gradients start early instead
  // of waiting for a full bucket.
  size_t first_bucket_bytes = size_t{1} << 20;
  // The host ops move a bucket that must be packed in pieces of at most
  // this many bytes (rounded down to whole elements), each packed, reduced
  // and copied back while it is in cache; 0: the whole bucket at once.
  size_t chunk_bytes = 0;
  // The host ops on the CPU reduce full buckets on a thread of their own
  // while Add()'s caller goes on (the training loop's backward pass). Off
  // by default: on a 2-core machine with 2 ranks the thread competes with
  // the backward pass for the cores; mpi_bench's CNN step ran 0.98-1.08x
  // as fast with it on the quiet machine, 0.82-0.98x under load
  // (docs/perf.md). Worth trying where ranks have spare cores.
  bool overlap = false;
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
