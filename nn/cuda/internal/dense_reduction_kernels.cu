// Sum and CountArgMaxMatches partial reductions (dense_kernels.h): one
// thread per partial, strided over the elements or rows so neighbouring
// threads read neighbouring memory; the host adds the partials in order.
#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"
#include "sluice/nn/cuda/internal/dense_kernels.h"

namespace sluice::gpu_backend_internal {
namespace {

// Index of the first maximum of `c` values (NaNs never win): the CPU
// backend's ArgMax.
SLUICE_HD int64_t ArgMax(const float* x, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j) {
    if (x[j] > x[best]) best = j;
  }
  return best;
}

}  // namespace

int RunSum(const SumArgs& a, KernelTarget target) {
  const float* x = a.x;
  const int64_t count = a.count;
  double* partial = a.partial;
  const int64_t stride = ReductionPartials(count);
  return ForEach(stride, target, [=] __host__ __device__(int64_t p) {
    double acc = 0.0;
    for (int64_t i = p; i < count; i += stride) acc += static_cast<double>(x[i]);
    partial[p] = acc;
  });
}

int RunArgMaxMatches(const ArgMaxMatchArgs& a, KernelTarget target) {
  const float* scores = a.scores;
  const void* labels = a.labels;
  const ElemType type = a.label_type;
  const int64_t rows = a.rows, classes = a.classes;
  int64_t* partial = a.partial;
  const int64_t stride = ReductionPartials(rows);
  return ForEach(stride, target, [=] __host__ __device__(int64_t p) {
    int64_t count = 0;
    for (int64_t r = p; r < rows; r += stride) {
      int64_t want;
      if (type == ElemType::kInt32) {
        want = static_cast<const int32_t*>(labels)[r];
      } else if (type == ElemType::kInt64) {
        want = static_cast<const int64_t*>(labels)[r];
      } else {
        want = ArgMax(static_cast<const float*>(labels) + r * classes, classes);
      }
      if (ArgMax(scores + r * classes, classes) == want) ++count;
    }
    partial[p] = count;
  });
}

}  // namespace sluice::gpu_backend_internal
