// Strategy: replicas, their devices and their communicators.
#include "sluice/nn/strategy.h"

#include <algorithm>

#include "sluice/distribute/in_process.h"
#include "sluice/nn/backend.h"

namespace sluice::nn {
namespace {

// The registered GPUs, "gpu:0", "gpu:1"... while their backends answer.
std::vector<Device> VisibleGpus() {
  std::vector<Device> out;
  for (int i = 0; i < 64; ++i) {
    if (!GetBackend(Device::Gpu(i)).ok()) break;
    out.push_back(Device::Gpu(i));
  }
  return out;
}

}  // namespace

Strategy::Strategy(std::vector<Device> devices, int first_replica, int num_replicas,
                   std::shared_ptr<Communicator> process_comm)
    : devices_(std::move(devices)),
      first_replica_(first_replica),
      num_replicas_(num_replicas),
      process_comm_(std::move(process_comm)) {}

Strategy::~Strategy() = default;

std::string Strategy::Describe() const {
  std::string s = name() + ": " + std::to_string(num_replicas_) +
                  (num_replicas_ == 1 ? " replica" : " replicas") + " (this process: ";
  for (size_t r = 0; r < devices_.size(); ++r) {
    if (r) s += ", ";
    s += "replica " + std::to_string(first_replica_ + static_cast<int>(r)) + " on " +
         devices_[r].ToString();
  }
  if (process_comm_) s += "; " + process_comm_->Describe();
  return s + ")";
}

DistributedDataset Strategy::DistributeDatasets(
    const std::function<Dataset(const InputContext&)>& fn) const {
  DistributedDataset out;
  for (size_t r = 0; r < devices_.size(); ++r) {
    InputContext c;
    c.rank = first_replica_ + static_cast<int>(r);
    c.world_size = num_replicas_;
    // One replica per process: its communicator can serve the input (FILE
    // sharding's counts). Replicas that are threads of this process would
    // all be called from this one thread, so they get none.
    if (devices_.size() == 1) c.communicator = process_comm_;
    out.per_replica.push_back(fn(c));
    out.contexts.push_back(std::move(c));
  }
  return out;
}

Result<int64_t> Strategy::PerReplicaBatchSize(int64_t global_batch_size) const {
  if (global_batch_size < 1 || global_batch_size % num_replicas_ != 0) {
    return Status::InvalidArgument("the global batch size " + std::to_string(global_batch_size) +
                                   " does not divide evenly among " +
                                   std::to_string(num_replicas_) + " replicas");
  }
  return global_batch_size / num_replicas_;
}

Result<std::vector<Communicator*>> Strategy::ReplicaCommunicators() {
  if (replica_comms_.empty()) {
    if (process_comm_) {
      // Training's collectives on a channel of their own, apart from the
      // program's (and the input's) use of the process communicator.
      SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> dup, process_comm_->Duplicate());
      replica_comms_.push_back(std::move(dup));
    } else {
      replica_comms_ = InProcessGroup::Create(static_cast<int>(devices_.size()));
    }
  }
  std::vector<Communicator*> out;
  for (const auto& c : replica_comms_) out.push_back(c.get());
  return out;
}

Result<std::shared_ptr<MirroredStrategy>> MirroredStrategy::Create(MirroredOptions options) {
  std::vector<Device> devices;
  for (const std::string& name : options.devices) {
    SLUICE_ASSIGN_OR_RETURN(Device d, Device::Parse(name));
    if (std::find(devices.begin(), devices.end(), d) != devices.end()) {
      return Status::InvalidArgument("MirroredStrategy: device " + d.ToString() +
                                     " is listed twice");
    }
    Result<Backend*> b = GetBackend(d);
    if (!b.ok()) return b.status().WithContext("MirroredStrategy: device " + name);
    devices.push_back(d);
  }
  if (devices.empty()) devices = VisibleGpus();
  if (devices.empty()) devices.push_back(Device::Cpu());
  // CPU replicas share the cores: each backend gets its part of them.
  int cpu_replicas = 0;
  for (const Device& d : devices) cpu_replicas += d.kind() == DeviceKind::kCpu ? 1 : 0;
  if (cpu_replicas > 1) {
    for (const Device& d : devices) {
      if (d.kind() != DeviceKind::kCpu) continue;
      SLUICE_ASSIGN_OR_RETURN(Backend * b, GetBackend(d));
      b->SetNumThreads(std::max(1, b->num_threads() / cpu_replicas));
    }
  }
  const int n = static_cast<int>(devices.size());
  auto s =
      std::shared_ptr<MirroredStrategy>(new MirroredStrategy(std::move(devices), 0, n, nullptr));
  s->cross_device_ = options.cross_device;
  return s;
}

Result<std::shared_ptr<MultiWorkerMirroredStrategy>> MultiWorkerMirroredStrategy::Create(
    MultiWorkerOptions options) {
  std::shared_ptr<Communicator> comm = options.communicator;
  if (!comm) {
    SLUICE_ASSIGN_OR_RETURN(comm, Connect(options.communicator_options));
  }
  Device device = Device::Cpu();
  if (!options.device.empty()) {
    SLUICE_ASSIGN_OR_RETURN(device, Device::Parse(options.device));
  } else {
    std::vector<Device> gpus = VisibleGpus();
    if (!gpus.empty()) {
      // One GPU per process of a host, by local rank.
      Result<ClusterSpec> cluster = ClusterResolver::FromEnvironment();
      const int local = cluster.ok() ? cluster->local_rank : 0;
      device = gpus[static_cast<size_t>(local) % gpus.size()];
    }
  }
  Result<Backend*> b = GetBackend(device);
  if (!b.ok()) return b.status().WithContext("MultiWorkerMirroredStrategy: device");
  // CPU ranks on one host share its cores: each backend gets its part.
  if (device.kind() == DeviceKind::kCpu) {
    Result<ClusterSpec> cluster = ClusterResolver::FromEnvironment();
    if (cluster.ok() && cluster->local_size > 1) {
      (*b)->SetNumThreads(std::max(1, (*b)->num_threads() / cluster->local_size));
    }
  }
  const int rank = comm->rank(), size = comm->size();
  auto s = std::shared_ptr<MultiWorkerMirroredStrategy>(
      new MultiWorkerMirroredStrategy({device}, rank, size, std::move(comm)));
  s->cross_device_ = options.cross_device;
  return s;
}

}  // namespace sluice::nn
