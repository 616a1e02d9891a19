// Strategy: data-parallel training over several replicas of a model, kept
// in sync (tf.distribute's MirroredStrategy and
// MultiWorkerMirroredStrategy).
//
//   auto strategy = nn::MultiWorkerMirroredStrategy::Create().value();  // under mpirun
//   auto train = strategy->DistributeDatasets([&](const InputContext& ctx) {
//     return TFRecordDataset(files).global_shuffle({.seed = 7})
//         .apply(distribute(ctx)).map(parse)
//         .batch(ctx_batch, {.drop_remainder = true});
//   });
//   model.Compile({.optimizer = ..., .loss = ..., .strategy = strategy});
//   model.Fit(train, {.epochs = 5});
//
// Every replica starts from replica 0's weights and optimizer state
// (broadcast when Fit begins), computes the gradient of its own batch, and
// the gradients are averaged over all replicas (all-reduce, in fused
// buckets of about 25 MB, last layer first, optionally overlapped with the
// backward pass) before every replica applies the same update: the
// replicas' weights stay equal, bit for bit on the CPU. Loss and metrics
// are reduced over the replicas. Only the chief (global replica 0's
// process) writes TensorBoard logs from Fit; checkpoints are the caller's,
// and should be written where is_chief().
//
// MirroredStrategy: one process, several devices (CPU replicas "cpu:0",
// "cpu:1"...; GPUs "gpu:0"...), a thread per replica, gradients averaged
// through an in-process group. MultiWorkerMirroredStrategy: one replica per
// process (started by mpirun or srun), gradients averaged over MPI.
//
// A rank or replica that fails makes the others fail with an error naming
// it (in-process at once; over MPI the job ends), never a hang; a collective
// that waits longer than the communicator's timeout fails.
//
// Ownership: shared (models keep it through CompileOptions). Thread-safety:
// none; one thread drives Fit.
#ifndef SLUICE_NN_STRATEGY_H_
#define SLUICE_NN_STRATEGY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/device.h"
#include "sluice/distribute/communicator.h"
#include "sluice/distribute/distribute.h"
#include "sluice/nn/cross_device_ops.h"
#include "sluice/pipeline/dataset.h"

namespace sluice::nn {

// One dataset per local replica: what Fit and Evaluate take under a
// strategy (tf's distribute_datasets_from_function).
struct DistributedDataset {
  std::vector<Dataset> per_replica;  // local replica r's batches
  std::vector<InputContext> contexts;
};

class Strategy {
 public:
  virtual ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  // "MirroredStrategy", "MultiWorkerMirroredStrategy".
  virtual std::string name() const = 0;
  // Replicas training together, in every process.
  int num_replicas_in_sync() const { return num_replicas_; }
  // The devices of this process's replicas; local replica r is global
  // replica first_replica() + r.
  const std::vector<Device>& local_devices() const { return devices_; }
  int first_replica() const { return first_replica_; }
  // Whether this process holds global replica 0 (the one that writes).
  bool is_chief() const { return first_replica_ == 0; }
  // "MultiWorkerMirroredStrategy: 2 replicas (this process: replica 1 on cpu:0; MPI ...)".
  std::string Describe() const;

  // fn(ctx) for every local replica; ctx.rank / ctx.world_size are the
  // replica's global index and num_replicas_in_sync() (with the process's
  // communicator when there is one replica per process).
  DistributedDataset DistributeDatasets(
      const std::function<Dataset(const InputContext&)>& fn) const;
  // The per-replica batch for a global one (tf's
  // get_per_replica_batch_size): InvalidArgument unless it divides evenly.
  Result<int64_t> PerReplicaBatchSize(int64_t global_batch_size) const;

  // For the training core: communicators, one per local replica, spanning
  // every replica in sync (rank = global replica index). Created on first
  // use; the same on every call.
  Result<std::vector<Communicator*>> ReplicaCommunicators();
  // How the replicas' gradients are reduced (bucket size, overlap with the
  // backward pass), as the options to Create gave it.
  const CrossDeviceOptions& cross_device_options() const { return cross_device_; }

 protected:
  Strategy(std::vector<Device> devices, int first_replica, int num_replicas,
           std::shared_ptr<Communicator> process_comm);

 private:
  std::vector<Device> devices_;
  int first_replica_;
  int num_replicas_;
  std::shared_ptr<Communicator> process_comm_;                // MultiWorker: this process's
  std::vector<std::unique_ptr<Communicator>> replica_comms_;  // Mirrored: in-process

 protected:
  CrossDeviceOptions cross_device_;
};

struct MirroredOptions {
  // "cpu:0", "cpu:1", "gpu:0"... Default: every GPU whose backend is
  // registered (gpu::RegisterNnBackend), else one CPU replica. CPU replicas
  // split the cores: each one's backend gets 1/n of its threads.
  std::vector<std::string> devices;
  CommunicatorOptions communicator;
  // Gradient buckets, and whether full buckets of the last layers are
  // all-reduced while the backward pass goes on (overlap, off by default).
  CrossDeviceOptions cross_device;
};

class MirroredStrategy : public Strategy {
 public:
  // InvalidArgument for a device that does not parse, appears twice, or has
  // no backend (naming it).
  static Result<std::shared_ptr<MirroredStrategy>> Create(MirroredOptions options = {});
  std::string name() const override { return "MirroredStrategy"; }

 private:
  using Strategy::Strategy;
};

struct MultiWorkerOptions {
  // This process's device. Default: "gpu:<local rank>" when a GPU backend is
  // registered, else "cpu" (whose backend then gets 1/local size of the
  // cores: the host's ranks share them).
  std::string device;
  // The processes' communicator. Default: Connect() (MPI under mpirun).
  std::shared_ptr<Communicator> communicator;
  CommunicatorOptions communicator_options;
  // As MirroredOptions::cross_device.
  CrossDeviceOptions cross_device;
};

class MultiWorkerMirroredStrategy : public Strategy {
 public:
  static Result<std::shared_ptr<MultiWorkerMirroredStrategy>> Create(
      MultiWorkerOptions options = {});
  std::string name() const override { return "MultiWorkerMirroredStrategy"; }

 private:
  using Strategy::Strategy;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_STRATEGY_H_
