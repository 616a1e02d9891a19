// MatMul, BiasAdd and BiasGrad.
//
// MatMul runs oneDNN's matmul primitive, cached per shape, transposes and
// beta (a sum post-op). Against the row-major dnnl_sgemm on a Dense layer's
// shapes (bench/nn/backend_bench.cc, one thread) it was 9% faster for
// [64,800]x[800,64] and [64,1152]x[1152,64] and level elsewhere.
#include <bit>
#include <vector>

#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/dnnl_context.h"
#include "sluice/nn/cpu/parallel.h"
#include "sluice/nn/kit/dense_checks.h"
#include "sluice/nn/kit/float32_staging.h"

namespace sluice::nn::cpu {
namespace {

struct MatMulPrimitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

// c[m,n] = op(a) · op(b) + beta · c. A transposed operand is its stored
// row-major matrix read column-major (format "ba"), so no copy is made.
MatMulPrimitive MakeMatMul(int64_t m, int64_t k, int64_t n, bool ta, bool tb, float beta,
                           const dnnl::engine& engine) {
  using Tag = dnnl::memory::format_tag;
  auto md = [](dnnl::memory::dims d, bool transposed) {
    return dnnl::memory::desc(d, dnnl::memory::data_type::f32, transposed ? Tag::ba : Tag::ab);
  };
  dnnl::primitive_attr attr = UserScratchpad();
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(md({m, k}, ta), md({k, n}, tb), md({m, n}, false)), attr, engine);
  return {pd, dnnl::matmul(pd)};
}

}  // namespace

Status CpuBackend::MatMul(const DeviceTensor& a, bool transpose_a, const DeviceTensor& b,
                          bool transpose_b, float beta, DeviceTensor* c) {
  if (kit::AnyBFloat16({&a, &b, c})) {
    return kit::in_float32::MatMul(*this, a, transpose_a, b, transpose_b, beta, c);
  }
  constexpr std::string_view kMethod = "MatMul";
  SLUICE_ASSIGN_OR_RETURN(const kit::MatMulDims dims,
                          kit::CheckMatMul(device_, a, transpose_a, b, transpose_b, c));
  const int64_t m = dims.m, k = dims.k, n = dims.n;
  float* pc = c->data<float>();
  if (m == 0 || n == 0) return Status::OK();
  if (k == 0) {
    // An empty sum: c = beta · c, without reading c when beta == 0.
    for (int64_t i = 0; i < m * n; ++i) pc[i] = beta == 0.0f ? 0.0f : beta * pc[i];
    return Status::OK();
  }
  UseThreads();
  return RunDnnl(kMethod, [&]() -> Status {
    const dnnl::engine& engine = dnnl_->engine;
    const std::string key = "matmul," + std::to_string(m) + "," + std::to_string(k) + "," +
                            std::to_string(n) + "," + (transpose_a ? "T" : "N") +
                            (transpose_b ? "T" : "N") + "," +
                            std::to_string(std::bit_cast<uint32_t>(beta));
    auto p = dnnl_->Get<MatMulPrimitive>(
        key, [&] { return MakeMatMul(m, k, n, transpose_a, transpose_b, beta, engine); });
    return Execute(kMethod, p->prim, p->pd, engine,
                   {{DNNL_ARG_SRC, Wrap(p->pd.src_desc(), engine, a.raw_data())},
                    {DNNL_ARG_WEIGHTS, Wrap(p->pd.weights_desc(), engine, b.raw_data())},
                    {DNNL_ARG_DST, Wrap(p->pd.dst_desc(), engine, c->raw_data())}});
  });
}

Status CpuBackend::BiasAdd(const DeviceTensor& bias, DeviceTensor* y) {
  // float32 or bfloat16 (staged); then all float32 below.
  SLUICE_RETURN_IF_ERROR(kit::CheckBiasAdd(device_, bias, y, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&bias, y})) return kit::in_float32::BiasAdd(*this, bias, y);
  const int64_t c = bias.dim(0);
  if (c == 0) return Status::OK();
  const float* pb = bias.data<float>();
  float* py = y->data<float>();
  ParallelFor(y->num_elements() / c, UseThreads(), c, [&](int, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = py + r * c;
#pragma omp simd
      for (int64_t j = 0; j < c; ++j) row[j] += pb[j];
    }
  });
  return Status::OK();
}

Status CpuBackend::BiasGrad(const DeviceTensor& dy, float beta, DeviceTensor* db) {
  SLUICE_RETURN_IF_ERROR(kit::CheckBiasGrad(device_, dy, db, kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&dy, db})) return kit::in_float32::BiasGrad(*this, dy, beta, db);
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
#pragma omp simd
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
