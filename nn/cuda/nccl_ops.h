// NCCL for the training core's strategies: registers nn::CrossDeviceOps for
// GPU replicas that average gradients and broadcast weights with NCCL
// (all-reduce with ncclAvg, broadcast), on the nn backend's stream, so a
// step needs no host synchronization for them.
//
//   gpu::RegisterNnBackend();
//   gpu::RegisterNcclCrossDeviceOps();   // then MirroredStrategy over gpu:0, gpu:1...
//
// libnccl.so.2 is opened at run time (dlopen), as cuBLAS and cuDNN are, so
// binaries need it only when GPUs train together. The NCCL unique id goes
// to the other replicas over the strategy's Communicator (MPI between
// processes, memory between threads).
//
// NCCL refuses two ranks on one GPU: replicas on logical devices of one GPU
// (or processes sharing a GPU) fall back to the host ops, which reduce
// through host memory; so do all replicas when any of them cannot load
// NCCL. The choice is made together, so every replica makes the same one.
//
// Thread-safety: RegisterNcclCrossDeviceOps is idempotent and thread-safe.
#ifndef SLUICE_NN_CUDA_NCCL_OPS_H_
#define SLUICE_NN_CUDA_NCCL_OPS_H_

#include "sluice/core/status.h"

namespace sluice::gpu {

void RegisterNcclCrossDeviceOps();

// OK if libnccl.so.2 loads and has what sluice calls; else Unavailable with
// the reason. For tests and diagnostics.
Status NcclAvailability();

}  // namespace sluice::gpu

#endif  // SLUICE_NN_CUDA_NCCL_OPS_H_
