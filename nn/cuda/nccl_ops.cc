// NCCL opened at run time, and nn::CrossDeviceOps over it (nccl_ops.h).
#include "sluice/nn/cuda/nccl_ops.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <string>

#include "sluice/device/runtime.h"
#include "sluice/device/dynamic_library.h"
#include "sluice/nn/cuda/cuda_backend.h"
#include "sluice/nn/cross_device_ops.h"

namespace sluice::gpu {
namespace {

// The functions used, typed from NCCL's own prototypes.
struct NcclFunctions {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetVersion) version = nullptr;
};

struct Loaded {
  Status status;
  NcclFunctions fn;
  int version = 0;
};

Loaded LoadOnce() {
  Loaded l;
  Result<gpu_internal::DynamicLibrary> lib =
      gpu_internal::DynamicLibrary::OpenFirst("NCCL", {"libnccl.so.2", "libnccl.so"});
  if (!lib.ok()) {
    l.status = lib.status();
    return l;
  }
  std::string missing;
  auto resolve = [&](const char* name, auto* fn) {
    if (!lib->Resolve(name, fn)) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  resolve("ncclGetUniqueId", &l.fn.get_unique_id);
  resolve("ncclCommInitRank", &l.fn.init_rank);
  resolve("ncclCommDestroy", &l.fn.destroy);
  resolve("ncclAllReduce", &l.fn.all_reduce);
  resolve("ncclBroadcast", &l.fn.broadcast);
  resolve("ncclGroupStart", &l.fn.group_start);
  resolve("ncclGroupEnd", &l.fn.group_end);
  resolve("ncclGetErrorString", &l.fn.error_string);
  resolve("ncclGetVersion", &l.fn.version);
  if (!missing.empty()) {
    l.status = Status::Unavailable("NCCL has no symbol " + missing);
    return l;
  }
  l.fn.version(&l.version);
  if (l.version < 21000) {  // ncclAvg arrived in 2.10
    l.status = Status::Unavailable("NCCL " + std::to_string(l.version) +
                                   " is older than 2.10 (no ncclAvg)");
  }
  return l;
}

const Loaded& Nccl() {
  static const Loaded loaded = LoadOnce();
  return loaded;
}

Status Check(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return Status::OK();
  return Status::Unavailable("NCCL " + what + ": " + Nccl().fn.error_string(r));
}

class NcclOps : public nn::CrossDeviceOps {
 public:
  NcclOps(ncclComm_t comm, cudaStream_t stream, std::string description)
      : comm_(comm), stream_(stream), description_(std::move(description)) {}
  ~NcclOps() override { Nccl().fn.destroy(comm_); }

  std::string name() const override { return description_; }

  Status AllReduceMean(std::span<DeviceTensor* const> tensors) override {
    const NcclFunctions& f = Nccl().fn;
    f.group_start();
    Status s;
    for (DeviceTensor* t : tensors) {
      ncclDataType_t type = ncclFloat32;
      if (t->dtype() == DType::kFloat64) {
        type = ncclFloat64;
      } else if (t->dtype() != DType::kFloat32) {
        s = Status::InvalidArgument("all-reduce: " + std::string(DTypeName(t->dtype())) +
                                    "; float32 or float64 only");
        break;
      }
      s = Check(f.all_reduce(t->raw_data(), t->raw_data(), static_cast<size_t>(t->num_elements()),
                             type, ncclAvg, comm_, stream_),
                "all-reduce");
      if (!s.ok()) break;
      bytes_ += static_cast<int64_t>(t->byte_size());
    }
    Status end = Check(f.group_end(), "all-reduce");
    return s.ok() ? end : s;
  }

  Status Broadcast(std::span<DeviceTensor* const> tensors, int root) override {
    const NcclFunctions& f = Nccl().fn;
    f.group_start();
    Status s;
    for (DeviceTensor* t : tensors) {
      s = Check(f.broadcast(t->raw_data(), t->raw_data(), t->byte_size(), ncclUint8, root, comm_,
                            stream_),
                "broadcast");
      if (!s.ok()) break;
    }
    Status end = Check(f.group_end(), "broadcast");
    return s.ok() ? end : s;
  }

  int64_t bytes_reduced() const override { return bytes_; }

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
  std::string description_;
  int64_t bytes_ = 0;
};

// The NCCL ops for this replica, or nullptr (the host ops) when any
// replica cannot use NCCL: decided together over `comm`.
Result<std::unique_ptr<nn::CrossDeviceOps>> MakeNcclOps(nn::Backend& backend, Communicator& comm,
                                                        const nn::CrossDeviceOptions&) {
  // This replica's physical GPU ("host/pci bus id"), or "" if NCCL cannot
  // serve it (a host stream, no libnccl).
  std::string key;
  int ordinal = -1;
  void* stream = nullptr;
  Result<Stream*> s = NnBackendStream(backend);
  if (s.ok() && (*s)->native_handle() != nullptr && Nccl().status.ok()) {
    Result<const gpu_internal::DeviceRuntime*> rt = gpu_internal::GetDeviceRuntime((*s)->device());
    char pci[64] = {};
    char host[256] = {};
    if (rt.ok() && cudaDeviceGetPCIBusId(pci, sizeof(pci), (*rt)->cuda_ordinal) == cudaSuccess &&
        gethostname(host, sizeof(host) - 1) == 0) {
      ordinal = (*rt)->cuda_ordinal;
      stream = (*s)->native_handle();
      key = std::string(host) + "/" + pci;
    }
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> keys, comm.AllGatherBytes(key));
  std::set<std::string> distinct(keys.begin(), keys.end());
  if (distinct.count("") > 0 || distinct.size() != keys.size()) {
    return std::unique_ptr<nn::CrossDeviceOps>();  // a replica without NCCL, or a shared GPU
  }
  ncclUniqueId id{};
  if (comm.rank() == 0) SLUICE_RETURN_IF_ERROR(Check(Nccl().fn.get_unique_id(&id), "unique id"));
  SLUICE_RETURN_IF_ERROR(comm.Broadcast(&id, sizeof(id), 0));
  if (cudaSetDevice(ordinal) != cudaSuccess) {
    return Status::Unavailable("NCCL: cannot make GPU " + std::to_string(ordinal) + " current");
  }
  ncclComm_t nc = nullptr;
  SLUICE_RETURN_IF_ERROR(Check(Nccl().fn.init_rank(&nc, comm.size(), id, comm.rank()),
                               "init rank " + std::to_string(comm.rank())));
  const int v = Nccl().version;
  return std::unique_ptr<nn::CrossDeviceOps>(std::make_unique<NcclOps>(
      nc, static_cast<cudaStream_t>(stream),
      "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
          std::to_string(v % 100) + " (" + comm.Describe() + ")"));
}

}  // namespace

Status NcclAvailability() { return Nccl().status; }

void RegisterNcclCrossDeviceOps() {
  static std::once_flag once;
  std::call_once(once, [] { nn::RegisterCrossDeviceOps(DeviceKind::kGpu, MakeNcclOps); });
}

}  // namespace sluice::gpu
