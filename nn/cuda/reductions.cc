// GpuBackend's reductions for metrics, Sum and CountArgMaxMatches: a kernel
// writes at most kMaxReductionPartials partial results (double sums, int64
// counts) to scratch; they come back to the host (waiting) and are added
// there in order, so the result is the same on every run and device.
#include <vector>

#include "sluice/nn/cuda/internal/gpu_backend.h"
#include "sluice/nn/cuda/internal/dense_kernels.h"
#include "sluice/nn/kit/dense_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::gpu::backend {

Result<double> GpuBackend::Sum(const DeviceTensor& x) {
  if (nn::kit::AnyBFloat16({&x})) return nn::kit::in_float32::Sum(*this, x);
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckSum(device(), x));
  const int64_t count = x.num_elements();
  if (count == 0) {
    SLUICE_RETURN_IF_ERROR(Synchronize());
    return 0.0;
  }
  const int64_t partials = gpu_backend_internal::ReductionPartials(count);
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor scratch, Scratch(DType::kFloat64, Shape{partials}));
  const gpu_backend_internal::SumArgs a{x.data<float>(), count, scratch.data<double>()};
  SLUICE_RETURN_IF_ERROR(
      Launch("Sum", [a](KernelTarget t) { return gpu_backend_internal::RunSum(a, t); }));
  std::vector<double> host(partials);
  SLUICE_RETURN_IF_ERROR(
      CopyToHostAndWait(scratch.raw_data(), host.data(), host.size() * sizeof(double)));
  double sum = 0.0;
  for (double s : host) sum += s;
  return sum;
}

Result<int64_t> GpuBackend::CountArgMaxMatches(const DeviceTensor& scores,
                                               const DeviceTensor& labels) {
  if (nn::kit::AnyBFloat16({&scores, &labels})) {
    return nn::kit::in_float32::CountArgMaxMatches(*this, scores, labels);
  }
  SLUICE_RETURN_IF_ERROR(nn::kit::CheckCountArgMaxMatches(device(), scores, labels));
  const int64_t rows = scores.dim(0);
  if (rows == 0) {
    SLUICE_RETURN_IF_ERROR(Synchronize());
    return int64_t{0};
  }
  const int64_t partials = gpu_backend_internal::ReductionPartials(rows);
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor scratch, Scratch(DType::kInt64, Shape{partials}));
  const gpu_backend_internal::ArgMaxMatchArgs a{
      scores.data<float>(),
      labels.raw_data(),
      static_cast<gpu_backend_internal::ElemType>(labels.dtype()),
      rows,
      scores.dim(1),
      scratch.data<int64_t>()};
  SLUICE_RETURN_IF_ERROR(Launch("CountArgMaxMatches", [a](KernelTarget t) {
    return gpu_backend_internal::RunArgMaxMatches(a, t);
  }));
  std::vector<int64_t> host(partials);
  SLUICE_RETURN_IF_ERROR(
      CopyToHostAndWait(scratch.raw_data(), host.data(), host.size() * sizeof(int64_t)));
  int64_t count = 0;
  for (int64_t c : host) count += c;
  return count;
}

}  // namespace sluice::gpu::backend
