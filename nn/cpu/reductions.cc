// Sum and CountArgMaxMatches: the host-side reductions metrics need.
#include <vector>

#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/parallel.h"
#include "sluice/nn/kit/dense_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::nn::cpu {
namespace {

// Index of the first maximum of `c` values (NaNs never win).
inline int64_t ArgMax(const float* x, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j) {
    if (x[j] > x[best]) best = j;
  }
  return best;
}

}  // namespace

Result<double> CpuBackend::Sum(const DeviceTensor& x) {
  if (kit::AnyBFloat16({&x})) return kit::in_float32::Sum(*this, x);
  SLUICE_RETURN_IF_ERROR(kit::CheckSum(device_, x));
  const float* p = x.data<float>();
  const int chunks = NumChunks(x.num_elements(), UseThreads());
  // Double partials per chunk, combined in chunk order.
  std::vector<double> partial(chunks, 0.0);
  ParallelFor(x.num_elements(), chunks, 1, [&](int chunk, int64_t begin, int64_t end) {
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = begin; i < end; ++i) acc += p[i];
    partial[chunk] = acc;
  });
  double sum = 0.0;
  for (double s : partial) sum += s;
  return sum;
}

Result<int64_t> CpuBackend::CountArgMaxMatches(const DeviceTensor& scores,
                                               const DeviceTensor& labels) {
  if (kit::AnyBFloat16({&scores, &labels})) {
    return kit::in_float32::CountArgMaxMatches(*this, scores, labels);
  }
  SLUICE_RETURN_IF_ERROR(kit::CheckCountArgMaxMatches(device_, scores, labels));
  const int64_t n = scores.dim(0), c = scores.dim(1);
  const DType dt = labels.dtype();
  const float* s = scores.data<float>();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t want;
    if (dt == DType::kInt32)
      want = labels.data<int32_t>()[i];
    else if (dt == DType::kInt64)
      want = labels.data<int64_t>()[i];
    else
      want = ArgMax(labels.data<float>() + i * c, c);
    if (ArgMax(s + i * c, c) == want) ++count;
  }
  return count;
}

}  // namespace sluice::nn::cpu
