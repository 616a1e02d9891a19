// A two-layer MLP's SGD training step written with nn::Backend calls, the
// custom step that gpu_train_bench replays as a captured graph and that
// tests/gpu/nn_backend_capture_test.cc checks (header-only, shared by both).
//
// x [batch, in] float32 -> Dense(hidden, relu) -> Dense(classes) ->
// sparse cross-entropy from logits (mean over the batch) -> SGD with
// momentum on all four weights. The step reads x and y, writes the
// per-example loss and the weights, and allocates its intermediates (a
// captured step keeps them for the graph).
#ifndef SLUICE_BENCH_GPU_MLP_STEP_H_
#define SLUICE_BENCH_GPU_MLP_STEP_H_

#include <cstdint>
#include <random>
#include <vector>

#include "sluice/nn/backend.h"

namespace sluice::mlp_step {

struct Mlp {
  int64_t batch = 0, in = 0, hidden = 0, classes = 0;
  float learning_rate = 0.1f, momentum = 0.9f;
  DeviceTensor w1, b1, w2, b2;          // weights
  DeviceTensor v_w1, v_b1, v_w2, v_b2;  // their momentum
  DeviceTensor x, y;                    // inputs: float32 [batch, in], int64 [batch]
  DeviceTensor loss;                    // output: float32 [batch]
};

// Weights uniform in [-0.5, 0.5) from `seed`; momentum, x, y zero.
inline Result<Mlp> MakeMlp(nn::Backend& b, int64_t batch, int64_t in, int64_t hidden,
                           int64_t classes, uint32_t seed) {
  Mlp m{batch, in, hidden, classes};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  auto weights = [&](const Shape& shape, DeviceTensor* t) -> Status {
    std::vector<float> v(shape.num_elements());
    for (float& f : v) f = dist(gen);
    SLUICE_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector<float>(v, shape));
    SLUICE_ASSIGN_OR_RETURN(*t, b.ToDevice(host));
    return Status::OK();
  };
  SLUICE_RETURN_IF_ERROR(weights(Shape{in, hidden}, &m.w1));
  SLUICE_RETURN_IF_ERROR(weights(Shape{hidden}, &m.b1));
  SLUICE_RETURN_IF_ERROR(weights(Shape{hidden, classes}, &m.w2));
  SLUICE_RETURN_IF_ERROR(weights(Shape{classes}, &m.b2));
  SLUICE_ASSIGN_OR_RETURN(m.v_w1, b.Zeros(DType::kFloat32, Shape{in, hidden}));
  SLUICE_ASSIGN_OR_RETURN(m.v_b1, b.Zeros(DType::kFloat32, Shape{hidden}));
  SLUICE_ASSIGN_OR_RETURN(m.v_w2, b.Zeros(DType::kFloat32, Shape{hidden, classes}));
  SLUICE_ASSIGN_OR_RETURN(m.v_b2, b.Zeros(DType::kFloat32, Shape{classes}));
  SLUICE_ASSIGN_OR_RETURN(m.x, b.Zeros(DType::kFloat32, Shape{batch, in}));
  SLUICE_ASSIGN_OR_RETURN(m.y, b.Zeros(DType::kInt64, Shape{batch}));
  SLUICE_ASSIGN_OR_RETURN(m.loss, b.Zeros(DType::kFloat32, Shape{batch}));
  return m;
}

inline Status Step(nn::Backend& b, Mlp& m) {
  auto alloc = [&b](const Shape& s) { return b.Allocate(DType::kFloat32, s); };
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor h, alloc(Shape{m.batch, m.hidden}));
  SLUICE_RETURN_IF_ERROR(b.MatMul(m.x, false, m.w1, false, 0.0f, &h));
  SLUICE_RETURN_IF_ERROR(b.BiasAdd(m.b1, &h));
  SLUICE_RETURN_IF_ERROR(b.ActivationForward(nn::Activation::kRelu, h, &h));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor logits, alloc(Shape{m.batch, m.classes}));
  SLUICE_RETURN_IF_ERROR(b.MatMul(h, false, m.w2, false, 0.0f, &logits));
  SLUICE_RETURN_IF_ERROR(b.BiasAdd(m.b2, &logits));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dlogits, alloc(Shape{m.batch, m.classes}));
  SLUICE_RETURN_IF_ERROR(b.CrossEntropy(logits, m.y, /*from_logits=*/true,
                                        1.0f / static_cast<float>(m.batch), &m.loss, &dlogits));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dw2, alloc(Shape{m.hidden, m.classes}));
  SLUICE_RETURN_IF_ERROR(b.MatMul(h, true, dlogits, false, 0.0f, &dw2));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor db2, alloc(Shape{m.classes}));
  SLUICE_RETURN_IF_ERROR(b.BiasGrad(dlogits, 0.0f, &db2));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dh, alloc(Shape{m.batch, m.hidden}));
  SLUICE_RETURN_IF_ERROR(b.MatMul(dlogits, false, m.w2, true, 0.0f, &dh));
  SLUICE_RETURN_IF_ERROR(b.ActivationBackward(nn::Activation::kRelu, h, dh, &dh));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor dw1, alloc(Shape{m.in, m.hidden}));
  SLUICE_RETURN_IF_ERROR(b.MatMul(m.x, true, dh, false, 0.0f, &dw1));
  SLUICE_ASSIGN_OR_RETURN(DeviceTensor db1, alloc(Shape{m.hidden}));
  SLUICE_RETURN_IF_ERROR(b.BiasGrad(dh, 0.0f, &db1));
  const float lr = m.learning_rate, mom = m.momentum;
  SLUICE_RETURN_IF_ERROR(b.SgdUpdate(dw1, lr, mom, false, &m.w1, &m.v_w1));
  SLUICE_RETURN_IF_ERROR(b.SgdUpdate(db1, lr, mom, false, &m.b1, &m.v_b1));
  SLUICE_RETURN_IF_ERROR(b.SgdUpdate(dw2, lr, mom, false, &m.w2, &m.v_w2));
  return b.SgdUpdate(db2, lr, mom, false, &m.b2, &m.v_b2);
}

}  // namespace sluice::mlp_step

#endif  // SLUICE_BENCH_GPU_MLP_STEP_H_
