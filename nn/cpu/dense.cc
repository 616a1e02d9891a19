// MatMul, BiasAdd and BiasGrad.
//
// MatMul calls oneDNN's row-major dnnl_sgemm (see MatMulImpl for why not
// the matmul primitive).
#include <algorithm>
#include <cstring>
#include <dnnl.hpp>
#include <vector>

#include "sluice/nn/cpu/checks.h"
#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/parallel.h"

namespace sluice::nn::cpu {

Status CpuBackend::MatMul(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
                          bool transpose_b, float beta, DeviceTensor* c) {
  constexpr std::string_view kMethod = "MatMul";
  SLUICE_RETURN_IF_ERROR(
      CheckTensors(kMethod, device_, DType::kFloat32, {{"a", &a}, {"b", &b}, {"c", c}}));
  if (a.rank() != 2 || b.rank() != 2 || c->rank() != 2) {
    return Invalid(kMethod, "a, b and c must be 2-D", {{"a", &a}, {"b", &b}, {"c", c}});
  }
  const int64_t m = transpose_a ? a.dim(1) : a.dim(0);
  const int64_t k = transpose_a ? a.dim(0) : a.dim(1);
  const int64_t kb = transpose_b ? b.dim(1) : b.dim(0);
  const int64_t n = transpose_b ? b.dim(0) : b.dim(1);
  const std::string ops = std::string(transpose_a ? "a^T" : "a") + " · " +
                          (transpose_b ? "b^T" : "b");
  if (k != kb) {
    return Invalid(kMethod, "inner dimensions of " + ops + " differ",
                   {{"a", &a}, {"b", &b}, {"c", c}});
  }
  if (c->dim(0) != m || c->dim(1) != n) {
    return Invalid(kMethod,
                   "c must be [" + std::to_string(m) + "," + std::to_string(n) + "] for " + ops,
                   {{"a", &a}, {"b", &b}, {"c", c}});
  }
  float* pc = c->data<float>();
  if (m == 0 || n == 0) return Status::OK();
  if (k == 0) {
    // An empty sum: c = beta · c, without reading c when beta == 0.
    for (int64_t i = 0; i < m * n; ++i) pc[i] = beta == 0.0f ? 0.0f : beta * pc[i];
    return Status::OK();
  }
  UseThreads();
  // Row-major: a stored [m,k] (or [k,m] transposed) has leading dimension
  // equal to its stored column count.
  const dnnl_status_t s =
      dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k, 1.0f,
                 a.data<float>(), a.dim(1), b.data<float>(), b.dim(1), beta, pc, n);
  if (s != dnnl_success) {
    return Status::Internal("MatMul: dnnl_sgemm failed with status " +
                            std::to_string(static_cast<int>(s)) + " (" +
                            DescribeArgs({{"a", &a}, {"b", &b}, {"c", c}}) + ")");
  }
  return Status::OK();
}

Status CpuBackend::BiasAdd(const DeviceTensor& bias, DeviceTensor* y) {
  constexpr std::string_view kMethod = "BiasAdd";
  SLUICE_RETURN_IF_ERROR(
      CheckTensors(kMethod, device_, DType::kFloat32, {{"bias", &bias}, {"y", y}}));
  if (bias.rank() != 1 || y->rank() < 1 || y->dim(y->rank() - 1) != bias.dim(0)) {
    return Invalid(kMethod, "bias must be 1-D with y's last dimension",
                   {{"bias", &bias}, {"y", y}});
  }
  const int64_t c = bias.dim(0);
  if (c == 0) return Status::OK();
  const float* pb = bias.data<float>();
  float* py = y->data<float>();
  ParallelFor(y->num_elements() / c, UseThreads(), c, [&](int, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = py + r * c;
      for (int64_t j = 0; j < c; ++j) row[j] += pb[j];
    }
  });
  return Status::OK();
}

Status CpuBackend::BiasGrad(const DeviceTensor& dy, float beta, DeviceTensor* db) {
  constexpr std::string_view kMethod = "BiasGrad";
  SLUICE_RETURN_IF_ERROR(CheckTensors(kMethod, device_, DType::kFloat32, {{"dy", &dy}, {"db", db}}));
  if (db->rank() != 1 || dy.rank() < 1 || dy.dim(dy.rank() - 1) != db->dim(0)) {
    return Invalid(kMethod, "db must be 1-D with dy's last dimension", {{"dy", &dy}, {"db", db}});
  }
  const int64_t c = db->dim(0);
  if (c == 0) return Status::OK();
  const int64_t rows = dy.num_elements() / c;
  const float* pdy = dy.data<float>();
  const int chunks = NumChunks(rows, UseThreads(), c);
  // One partial row of sums per chunk, added in chunk order: the result
  // does not depend on which thread ran which chunk. Doubles: a conv
  // layer's bias sums tens of thousands of rows, where float drifts.
  std::vector<double> partial(static_cast<size_t>(chunks) * c, 0.0);
  ParallelFor(rows, chunks, c, [&](int chunk, int64_t begin, int64_t end) {
    double* acc = partial.data() + chunk * c;
    for (int64_t r = begin; r < end; ++r) {
      const float* row = pdy + r * c;
      for (int64_t j = 0; j < c; ++j) acc[j] += row[j];
    }
  });
  float* out = db->data<float>();
  for (int64_t j = 0; j < c; ++j) {
    double sum = beta == 0.0f ? 0.0 : double{beta} * out[j];
    for (int ch = 0; ch < chunks; ++ch) sum += partial[ch * c + j];
    out[j] = static_cast<float>(sum);
  }
  return Status::OK();
}

}  // namespace sluice::nn::cpu
