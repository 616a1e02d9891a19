// CrossDeviceOps: the host implementation (buckets reduced through a
// Communicator) and the registry of device modules' own.
#include "sluice/nn/cross_device_ops.h"

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace sluice::nn {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
std::map<DeviceKind, CrossDeviceOpsFactory>& Registry() {
  static std::map<DeviceKind, CrossDeviceOpsFactory> factories;
  return factories;
}

class HostCrossDeviceOps : public CrossDeviceOps {
 public:
  HostCrossDeviceOps(Backend& backend, Communicator& comm, CrossDeviceOptions options)
      : backend_(backend),
        comm_(comm),
        options_(options),
        on_host_(backend.device().kind == DeviceKind::kCpu) {}

  std::string name() const override {
    return "host (" + comm_.Describe() + "), buckets of " +
           std::to_string(options_.bucket_bytes >> 20) + " MB";
  }

  Status AllReduceMean(std::span<DeviceTensor* const> tensors) override {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const DType d = tensors[i]->dtype();
      if (d != DType::kFloat32 && d != DType::kFloat64) {
        return Status::InvalidArgument("all-reduce: tensor " + std::to_string(i) + " is " +
                                       std::string(DTypeName(d)) + "; float32 or float64 only");
      }
    }
    return ForEachBucket(tensors, [&](std::span<DeviceTensor* const> bucket) -> Status {
      const DType dtype = bucket[0]->dtype();
      size_t count = 0;
      for (const DeviceTensor* t : bucket) count += static_cast<size_t>(t->num_elements());
      bytes_ += static_cast<int64_t>(count * DTypeSize(dtype));
      if (on_host_ && bucket.size() == 1) {  // reduced where it lies
        return comm_.AllReduce(bucket[0]->raw_data(), count, dtype, ReduceOp::kMean);
      }
      SLUICE_RETURN_IF_ERROR(Pack(bucket));
      SLUICE_RETURN_IF_ERROR(comm_.AllReduce(staging_.data(), count, dtype, ReduceOp::kMean));
      return Unpack(bucket);
    });
  }

  Status Broadcast(std::span<DeviceTensor* const> tensors, int root) override {
    return ForEachBucket(tensors, [&](std::span<DeviceTensor* const> bucket) -> Status {
      if (on_host_ && bucket.size() == 1) {
        return comm_.Broadcast(bucket[0]->raw_data(), bucket[0]->byte_size(), root);
      }
      SLUICE_RETURN_IF_ERROR(Pack(bucket));
      SLUICE_RETURN_IF_ERROR(comm_.Broadcast(staging_.data(), staging_.size(), root));
      return Unpack(bucket);
    });
  }

  int64_t bytes_reduced() const override { return bytes_; }

 private:
  // Calls fn on runs of consecutive tensors of one dtype whose bytes fit in
  // a bucket (a larger tensor alone).
  template <typename Fn>
  Status ForEachBucket(std::span<DeviceTensor* const> tensors, Fn fn) {
    size_t i = 0;
    while (i < tensors.size()) {
      size_t j = i + 1, bytes = tensors[i]->byte_size();
      while (j < tensors.size() && tensors[j]->dtype() == tensors[i]->dtype() &&
             bytes + tensors[j]->byte_size() <= options_.bucket_bytes) {
        bytes += tensors[j]->byte_size();
        ++j;
      }
      SLUICE_RETURN_IF_ERROR(fn(tensors.subspan(i, j - i)));
      i = j;
    }
    return Status::OK();
  }

  // The bucket's bytes, one after another, into staging_ (host).
  Status Pack(std::span<DeviceTensor* const> bucket) {
    size_t total = 0;
    for (const DeviceTensor* t : bucket) total += t->byte_size();
    staging_.resize(total);
    size_t offset = 0;
    for (const DeviceTensor* t : bucket) {
      if (on_host_) {
        std::memcpy(staging_.data() + offset, t->raw_data(), t->byte_size());
      } else {
        SLUICE_ASSIGN_OR_RETURN(Tensor host, backend_.ToHost(*t));
        std::memcpy(staging_.data() + offset, host.raw_data(), t->byte_size());
      }
      offset += t->byte_size();
    }
    return Status::OK();
  }

  Status Unpack(std::span<DeviceTensor* const> bucket) {
    size_t offset = 0;
    for (DeviceTensor* t : bucket) {
      if (on_host_) {
        std::memcpy(t->raw_data(), staging_.data() + offset, t->byte_size());
      } else {
        SLUICE_ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(t->dtype(), t->shape()));
        std::memcpy(host.raw_data(), staging_.data() + offset, t->byte_size());
        SLUICE_RETURN_IF_ERROR(backend_.CopyFromHost(host, t));
      }
      offset += t->byte_size();
    }
    return Status::OK();
  }

  Backend& backend_;
  Communicator& comm_;
  const CrossDeviceOptions options_;
  const bool on_host_;  // the tensors' bytes are host memory
  std::vector<uint8_t> staging_;
  int64_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<CrossDeviceOps> MakeHostCrossDeviceOps(Backend& backend, Communicator& comm,
                                                       CrossDeviceOptions options) {
  return std::make_unique<HostCrossDeviceOps>(backend, comm, options);
}

void RegisterCrossDeviceOps(DeviceKind kind, CrossDeviceOpsFactory factory) {
  std::lock_guard<std::mutex> l(RegistryMutex());
  Registry()[kind] = std::move(factory);
}

Result<std::unique_ptr<CrossDeviceOps>> MakeCrossDeviceOps(Backend& backend, Communicator& comm,
                                                           CrossDeviceOptions options) {
  CrossDeviceOpsFactory factory;
  {
    std::lock_guard<std::mutex> l(RegistryMutex());
    auto it = Registry().find(backend.device().kind);
    if (it != Registry().end()) factory = it->second;
  }
  if (factory) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<CrossDeviceOps> ops, factory(backend, comm, options));
    if (ops) return ops;
  }
  return MakeHostCrossDeviceOps(backend, comm, options);
}

}  // namespace sluice::nn
