// CrossEntropy and MeanSquaredError with Keras's semantics, loss and
// gradient in one pass per row.
#include <algorithm>
#include <cmath>
#include <vector>

#include "sluice/nn/cpu/cpu_backend.h"
#include "sluice/nn/cpu/parallel.h"
#include "sluice/nn/kit/float32_staging.h"
#include "sluice/nn/kit/train_checks.h"

namespace sluice::nn::cpu {

namespace {

// Keras's backend.epsilon(): probabilities are clipped to [eps, 1 - eps].
constexpr float kEpsilon = 1e-7f;

// The labels of one row: a class id, or a dense distribution.
struct RowLabels {
  int64_t id = -1;               // sparse form
  const float* dense = nullptr;  // dense form, c values
  float weight(int64_t j) const { return dense != nullptr ? dense[j] : (j == id ? 1.0f : 0.0f); }
};

// Loss of one row of logits `x`; writes grad_scale · dloss/dx to `dx`
// (if non-null): softmax(x) · Σt - t.
float LogitsRow(const float* x, int64_t c, const RowLabels& t, float grad_scale, float* dx) {
  float max = x[0];
  for (int64_t j = 1; j < c; ++j) max = std::max(max, x[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(x[j] - max);
  const float lse = max + std::log(sum);
  float loss = 0.0f, tsum = 0.0f;
  for (int64_t j = 0; j < c; ++j) {
    const float w = t.weight(j);
    if (w != 0.0f) loss -= w * (x[j] - lse);
    tsum += w;
  }
  if (dx != nullptr) {
    for (int64_t j = 0; j < c; ++j) {
      dx[j] = grad_scale * (std::exp(x[j] - lse) * tsum - t.weight(j));
    }
  }
  return loss;
}

// Loss of one row of probabilities `p`: q = p / Σp, r = clip(q, eps, 1-eps),
// loss = -Σ t log r. The gradient goes back through the clip (zero where
// q is outside [eps, 1-eps], as tf.clip_by_value's) and the renormalization:
// g = dloss/dq, dloss/dp_k = (g_k - Σ_j g_j q_j) / Σp.
float ProbabilitiesRow(const float* p, int64_t c, const RowLabels& t, float grad_scale, float* dp) {
  float s = 0.0f;
  for (int64_t j = 0; j < c; ++j) s += p[j];
  const float inv_s = 1.0f / s;
  float loss = 0.0f, gq = 0.0f;
  for (int64_t j = 0; j < c; ++j) {
    const float w = t.weight(j);
    if (w == 0.0f) continue;
    const float q = p[j] * inv_s;
    const float r = std::clamp(q, kEpsilon, 1.0f - kEpsilon);
    loss -= w * std::log(r);
    if (q >= kEpsilon && q <= 1.0f - kEpsilon) gq += (-w / r) * q;
  }
  if (dp != nullptr) {
    for (int64_t j = 0; j < c; ++j) {
      const float w = t.weight(j);
      float g = 0.0f;
      if (w != 0.0f) {
        const float q = p[j] * inv_s;
        if (q >= kEpsilon && q <= 1.0f - kEpsilon) g = -w / q;
      }
      dp[j] = grad_scale * (g - gq) * inv_s;
    }
  }
  return loss;
}

template <typename Id>
Status CheckIds(const Id* ids, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= c) {
      return Status::InvalidArgument("CrossEntropy: label " + std::to_string(ids[i]) + " in row " +
                                     std::to_string(i) + " is outside [0, " + std::to_string(c) +
                                     ")");
    }
  }
  return Status::OK();
}

}  // namespace

Status CpuBackend::CrossEntropy(const DeviceTensor& pred, const DeviceTensor& labels,
                                bool from_logits, float grad_scale, DeviceTensor* loss,
                                DeviceTensor* dpred) {
  // float32 or bfloat16 (staged); then all float32 below.
  SLUICE_RETURN_IF_ERROR(kit::CheckCrossEntropy(device_, pred, labels, loss, dpred,
                                                kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&pred, &labels, loss, dpred})) {
    return kit::in_float32::CrossEntropy(*this, pred, labels, from_logits, grad_scale, loss, dpred);
  }
  const int64_t n = pred.dim(0), c = pred.dim(1);
  // Labels are checked before anything is written.
  if (labels.dtype() == DType::kInt32)
    SLUICE_RETURN_IF_ERROR(CheckIds(labels.data<int32_t>(), n, c));
  if (labels.dtype() == DType::kInt64)
    SLUICE_RETURN_IF_ERROR(CheckIds(labels.data<int64_t>(), n, c));

  const float* p = pred.data<float>();
  float* out = loss->data<float>();
  float* grad = dpred != nullptr ? dpred->data<float>() : nullptr;
  ParallelFor(n, UseThreads(), c * 8, [&](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      RowLabels t;
      if (labels.dtype() == DType::kInt32)
        t.id = labels.data<int32_t>()[i];
      else if (labels.dtype() == DType::kInt64)
        t.id = labels.data<int64_t>()[i];
      else
        t.dense = labels.data<float>() + i * c;
      float* g = grad != nullptr ? grad + i * c : nullptr;
      out[i] = from_logits ? LogitsRow(p + i * c, c, t, grad_scale, g)
                           : ProbabilitiesRow(p + i * c, c, t, grad_scale, g);
    }
  });
  return Status::OK();
}

Status CpuBackend::MeanSquaredError(const DeviceTensor& pred, const DeviceTensor& target,
                                    float grad_scale, DeviceTensor* loss, DeviceTensor* dpred) {
  SLUICE_RETURN_IF_ERROR(kit::CheckMeanSquaredError(device_, pred, target, loss, dpred,
                                                    kit::FloatTypes::kFloat32OrBFloat16));
  if (kit::AnyBFloat16({&pred, &target, loss, dpred})) {
    return kit::in_float32::MeanSquaredError(*this, pred, target, grad_scale, loss, dpred);
  }
  const int64_t n = pred.dim(0);
  const int64_t d = n == 0 ? 0 : pred.num_elements() / n;
  const float* p = pred.data<float>();
  const float* t = target.data<float>();
  float* out = loss->data<float>();
  float* grad = dpred != nullptr ? dpred->data<float>() : nullptr;
  const float inv_d = d == 0 ? 0.0f : 1.0f / static_cast<float>(d);
  ParallelFor(n, UseThreads(), d, [&](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float sum = 0.0f;
      for (int64_t j = i * d; j < (i + 1) * d; ++j) {
        const float e = p[j] - t[j];
        sum += e * e;
        if (grad != nullptr) grad[j] = grad_scale * 2.0f * inv_d * e;
      }
      out[i] = sum * inv_d;
    }
  });
  return Status::OK();
}

}  // namespace sluice::nn::cpu
