#include "sluice/nn/cpu/cpu_backend.h"

#include "sluice/nn/cpu/block_cache.h"

#include <omp.h>
#include <sched.h>

#include <cstring>

#include "sluice/nn/cpu/dnnl_context.h"
#include "sluice/nn/internal/cpu_factory.h"
#include "sluice/nn/kit/backend_checks.h"

namespace sluice::nn {
namespace cpu {

using kit::Arg;
using kit::CheckSameShape;
using kit::CheckTensors;
using kit::Invalid;

namespace {

// The cores this process may run on (taskset, cgroups' cpusets), which is
// what a training loop can actually use; at least 1.
int AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1, omp_get_num_procs());
}

// Free blocks kept for reuse: several training steps' worth of activations
// for the models sluice targets on a CPU.
constexpr size_t kMaxCachedBlockBytes = size_t{1} << 30;

}  // namespace

CpuBackend::CpuBackend(Device device)
    : device_(device),
      num_threads_(AllowedCores()),
      dnnl_(std::make_unique<DnnlContext>()),
      blocks_(BlockCache::Create(kMaxCachedBlockBytes)) {}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::name() const {
  const dnnl_version_t* v = dnnl_version();
  const int n = num_threads();
  return "cpu (oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + ", " + std::to_string(n) + (n == 1 ? " thread)" : " threads)");
}

void CpuBackend::SetNumThreads(int n) {
  num_threads_.store(std::max(1, n), std::memory_order_relaxed);
}

int CpuBackend::UseThreads() const {
  // -1: this thread has not set OpenMP's count yet.
  thread_local int current = -1;
  const int n = num_threads();
  if (current != n) {
    omp_set_num_threads(n);
    current = n;
  }
  return n;
}

Result<DeviceTensor> CpuBackend::Allocate(DType dtype, const Shape& shape) {
  SLUICE_RETURN_IF_ERROR(kit::CheckAllocate(dtype, shape));
  SLUICE_ASSIGN_OR_RETURN(
      Buffer b, blocks_->Get(static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype)));
  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromBuffer(dtype, shape, std::move(b)));
  return DeviceTensor(device_, std::move(t));
}

Result<DeviceTensor> CpuBackend::ToDevice(const Tensor& host) {
  SLUICE_RETURN_IF_ERROR(kit::CheckNumeric("ToDevice", host.dtype()));
  return DeviceTensor(device_, host);
}

Result<Tensor> CpuBackend::ToHost(const DeviceTensor& x) {
  if (x.device() != device_)
    return Invalid("ToHost", "x is not on " + device_.ToString(), {{"x", &x}});
  return x.storage();
}

Status CpuBackend::CopyFromHost(const Tensor& host, DeviceTensor* dst) {
  SLUICE_RETURN_IF_ERROR(kit::CheckCopyFromHost(device_, host, dst));
  if (dst->byte_size() > 0 && dst->raw_data() != host.raw_data()) {
    std::memmove(dst->raw_data(), host.raw_data(), dst->byte_size());
  }
  return Status::OK();
}

Status CpuBackend::Copy(const DeviceTensor& src, DeviceTensor* dst) {
  SLUICE_RETURN_IF_ERROR(kit::CheckCopy(device_, src, dst));
  if (dst->byte_size() > 0 && dst->raw_data() != src.raw_data()) {
    std::memmove(dst->raw_data(), src.raw_data(), dst->byte_size());
  }
  return Status::OK();
}

}  // namespace cpu
}  // namespace sluice::nn

namespace sluice::nn_internal {

Result<std::unique_ptr<nn::Backend>> MakeCpuBackend(Device device) {
  // cpu:1, cpu:2... are logical CPU devices: backends of their own (each
  // with its thread count) over the same cores and memory, for CPU replicas
  // (MirroredStrategy).
  if (device.kind() != DeviceKind::kCpu || device.index() < 0 || device.index() >= 64) {
    return Status::InvalidArgument("MakeCpuBackend: no CPU device " + device.ToString() +
                                   " (logical CPU devices are cpu:0 to cpu:63)");
  }
  try {
    return std::unique_ptr<nn::Backend>(std::make_unique<nn::cpu::CpuBackend>(device));
  } catch (const dnnl::error& e) {
    return Status::Internal(std::string("MakeCpuBackend: oneDNN failed: ") + e.what());
  }
}

}  // namespace sluice::nn_internal
