// CrossEntropy and MeanSquaredError loops (train_kernels.h): a pass with one
// thread per row for the loss (and the row's statistics the gradient
// needs), then a pass with one thread per element for the gradient. Each
// step is one rounded float operation in nn/cpu/losses.cc's order.
#include <cmath>

#include "sluice/nn/cuda/internal/backend_kernel_util.cuh"
#include "sluice/nn/cuda/internal/train_kernels.h"

namespace sluice::gpu_backend_internal {
namespace {

// Keras's backend.epsilon(): probabilities are clipped to [eps, 1 - eps].
constexpr float kEpsilon = 1e-7f;
constexpr float kOneMinusEpsilon = 1.0f - kEpsilon;

// The labels of row i: a class id (sparse forms), or c dense weights.
template <LabelKind kKind>
struct RowLabels {
  const void* labels;
  int64_t i, c;
  bool bf16;  // dense weights stored as bfloat16
  SLUICE_HD int64_t id() const {
    if constexpr (kKind == LabelKind::kInt32) {
      return static_cast<const int32_t*>(labels)[i];
    } else if constexpr (kKind == LabelKind::kInt64) {
      return static_cast<const int64_t*>(labels)[i];
    } else {
      return 0;
    }
  }
  // False for a class id outside [0, c).
  SLUICE_HD bool valid() const {
    if constexpr (kKind == LabelKind::kDense) {
      return true;
    } else {
      const int64_t k = id();
      return k >= 0 && k < c;
    }
  }
  SLUICE_HD float weight(int64_t j) const {
    if constexpr (kKind == LabelKind::kDense) {
      return LoadFloat(labels, bf16, i * c + j);
    } else {
      return j == id() ? 1.0f : 0.0f;
    }
  }
};

// Records the first bad class id in *e: claimed with atomicCAS on a GPU;
// on the host the loops of one backend run on one thread.
SLUICE_HD void RecordBadId(DeferredError* e, int64_t row, int64_t value, int64_t limit) {
#ifdef __CUDA_ARCH__
  auto* code = reinterpret_cast<unsigned long long*>(&e->code);               // NOLINT(runtime/int)
  if (atomicCAS(code, static_cast<unsigned long long>(DeferredError::kNone),  // NOLINT
                static_cast<unsigned long long>(DeferredError::kClassIdOutOfRange)) !=  // NOLINT
      static_cast<unsigned long long>(DeferredError::kNone)) {                          // NOLINT
    return;
  }
#else
  if (e->code != DeferredError::kNone) return;
  e->code = DeferredError::kClassIdOutOfRange;
#endif
  e->row = row;
  e->value = value;
  e->limit = limit;
}

// Per row of logits: loss = -Σ t (x - lse); stats = (lse, Σt) for the
// gradient softmax(x) · Σt - t.
template <LabelKind kKind>
SLUICE_HD float LogitsRow(const FloatView& x, const RowLabels<kKind>& t, float* stats) {
  const int64_t c = t.c;
  float max = x[0];
  for (int64_t j = 1; j < c; ++j) max = max < x[j] ? x[j] : max;  // std::max
  float sum = 0.0f;
  for (int64_t j = 0; j < c; ++j) sum = Add(sum, expf(Sub(x[j], max)));
  const float lse = Add(max, logf(sum));
  float loss = 0.0f, tsum = 0.0f;
  for (int64_t j = 0; j < c; ++j) {
    const float w = t.weight(j);
    if (w != 0.0f) loss = Sub(loss, Mul(w, Sub(x[j], lse)));
    tsum = Add(tsum, w);
  }
  if (stats != nullptr) {
    stats[0] = lse;
    stats[1] = tsum;
  }
  return loss;
}

// Per row of probabilities: q = p / Σp, r = clip(q, eps, 1 - eps), loss =
// -Σ t log r; stats = (1 / Σp, Σ_j g_j q_j) with g = dloss/dq, zero where q
// is clipped (as tf.clip_by_value's gradient).
template <LabelKind kKind>
SLUICE_HD float ProbabilitiesRow(const FloatView& p, const RowLabels<kKind>& t, float* stats) {
  const int64_t c = t.c;
  float s = 0.0f;
  for (int64_t j = 0; j < c; ++j) s = Add(s, p[j]);
  const float inv_s = Div(1.0f, s);
  float loss = 0.0f, gq = 0.0f;
  for (int64_t j = 0; j < c; ++j) {
    const float w = t.weight(j);
    if (w == 0.0f) continue;
    const float q = Mul(p[j], inv_s);
    const float r = q < kEpsilon ? kEpsilon : (kOneMinusEpsilon < q ? kOneMinusEpsilon : q);
    loss = Sub(loss, Mul(w, logf(r)));
    if (q >= kEpsilon && q <= kOneMinusEpsilon) gq = Add(gq, Mul(Div(-w, r), q));
  }
  if (stats != nullptr) {
    stats[0] = inv_s;
    stats[1] = gq;
  }
  return loss;
}

template <LabelKind kKind>
int CrossEntropy(const CrossEntropyArgs& a, KernelTarget target) {
  const void* pred = a.pred;
  const void* labels = a.labels;
  const bool logits = a.from_logits;
  const float scale = a.grad_scale;
  const int64_t c = a.c;
  void* loss = a.loss;
  void* dpred = a.dpred;
  const bool pb = a.pred_bf16, tb = a.labels_bf16, lb = a.loss_bf16, db = a.dpred_bf16;
  float* stats = a.dpred != nullptr ? a.row_stats : nullptr;
  DeferredError* error = a.error;
  int err = ForEach(a.n, target, [=] __host__ __device__(int64_t i) {
    const RowLabels<kKind> t{labels, i, c, tb};
    if (!t.valid()) {
      RecordBadId(error, i, t.id(), c);
      StoreFloat(loss, lb, i, NAN);
      return;
    }
    float* row_stats = stats != nullptr ? stats + 2 * i : nullptr;
    const FloatView row{pred, pb, i * c};
    StoreFloat(loss, lb, i,
               logits ? LogitsRow(row, t, row_stats) : ProbabilitiesRow(row, t, row_stats));
  });
  if (err != 0 || dpred == nullptr) return err;
  return ForEach(a.n * c, target, [=] __host__ __device__(int64_t k) {
    const int64_t i = k / c, j = k - i * c;
    const RowLabels<kKind> t{labels, i, c, tb};
    if (!t.valid()) {
      StoreFloat(dpred, db, k, 0.0f);
      return;
    }
    const float w = t.weight(j);
    const float p = LoadFloat(pred, pb, k);
    if (logits) {  // grad_scale · (e^(x - lse) · Σt - t)
      const float lse = stats[2 * i], tsum = stats[2 * i + 1];
      StoreFloat(dpred, db, k, Mul(scale, Sub(Mul(expf(Sub(p, lse)), tsum), w)));
      return;
    }
    const float inv_s = stats[2 * i], gq = stats[2 * i + 1];
    float g = 0.0f;  // dloss/dq_j
    if (w != 0.0f) {
      const float q = Mul(p, inv_s);
      if (q >= kEpsilon && q <= kOneMinusEpsilon) g = Div(-w, q);
    }
    // grad_scale · (g - Σ g q) / Σp
    StoreFloat(dpred, db, k, Mul(Mul(scale, Sub(g, gq)), inv_s));
  });
}

}  // namespace

int RunCrossEntropy(const CrossEntropyArgs& a, KernelTarget target) {
  switch (a.labels_kind) {
    case LabelKind::kInt32: return CrossEntropy<LabelKind::kInt32>(a, target);
    case LabelKind::kInt64: return CrossEntropy<LabelKind::kInt64>(a, target);
    case LabelKind::kDense: return CrossEntropy<LabelKind::kDense>(a, target);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int RunMeanSquaredError(const MeanSquaredErrorArgs& a, KernelTarget target) {
  const void* p = a.pred;
  const void* t = a.target;
  const bool pb = a.pred_bf16, tb = a.target_bf16, lb = a.loss_bf16, db = a.dpred_bf16;
  const int64_t d = a.d;
  const float inv_d = a.inv_d, scale = a.grad_scale;
  void* loss = a.loss;
  void* dpred = a.dpred;
  const int err = ForEach(a.n, target, [=] __host__ __device__(int64_t i) {
    float sum = 0.0f;
    for (int64_t j = i * d; j < (i + 1) * d; ++j) {
      const float e = Sub(LoadFloat(p, pb, j), LoadFloat(t, tb, j));
      sum = Add(sum, Mul(e, e));
    }
    StoreFloat(loss, lb, i, Mul(sum, inv_d));
  });
  if (err != 0 || dpred == nullptr) return err;
  return ForEach(a.n * d, target, [=] __host__ __device__(int64_t k) {
    // grad_scale · 2 / d · e
    StoreFloat(dpred, db, k,
               Mul(Mul(Mul(scale, 2.0f), inv_d), Sub(LoadFloat(p, pb, k), LoadFloat(t, tb, k))));
  });
}

}  // namespace sluice::gpu_backend_internal
