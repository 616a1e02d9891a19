// DTypePolicy: the dtypes a layer computes in and keeps its weights in, as
// Keras's keras.mixed_precision.DTypePolicy.
//
//   "float32"          everything float32 (the default).
//   "mixed_bfloat16"   weights, their gradients, optimizer slots and
//                      checkpoints stay float32 (the master copy); the layer
//                      computes in bfloat16: its float inputs are cast to
//                      bfloat16, it reads bfloat16 copies of its weights,
//                      and its outputs are bfloat16. Products accumulate in
//                      float32 and every output is rounded to bfloat16 once.
//
//   nn::SetGlobalPolicy(nn::DTypePolicy::MixedBFloat16());  // layers made after this
//   ... model.Add(std::make_unique<Dense>(10));               // a bfloat16 layer
//   auto out = std::make_unique<ActivationLayer>("softmax");
//   out->SetDTypePolicy(nn::DTypePolicy::Float32());           // keep the output float32
//
// As in Keras, a layer takes the global policy when it is constructed, and
// losses compute in float32 whatever the predictions' dtype. bfloat16 has
// float32's range, so no loss scaling is needed; "mixed_float16" (which
// needs it) is not offered.
//
// Thread-safety: DTypePolicy is a value. The global policy may be set and
// read from any thread; set it before building models.
#ifndef SLUICE_NN_POLICY_H_
#define SLUICE_NN_POLICY_H_

#include <string_view>

#include "sluice/core/dtype.h"
#include "sluice/core/result.h"

namespace sluice::nn {

class DTypePolicy {
 public:
  // "float32".
  DTypePolicy() = default;
  static DTypePolicy Float32() { return DTypePolicy(); }
  static DTypePolicy MixedBFloat16() { return DTypePolicy(DType::kBFloat16); }
  // "float32" or "mixed_bfloat16"; InvalidArgument naming the choices.
  static Result<DTypePolicy> FromName(std::string_view name);

  // "float32" or "mixed_bfloat16".
  std::string_view name() const;
  // The dtype of the layer's computations and outputs.
  DType compute_dtype() const { return compute_; }
  // The dtype of its weights: always float32.
  DType variable_dtype() const { return DType::kFloat32; }

  bool operator==(const DTypePolicy& other) const = default;

 private:
  explicit DTypePolicy(DType compute) : compute_(compute) {}
  DType compute_ = DType::kFloat32;
};

// The policy layers take when constructed (keras.mixed_precision.
// set_global_policy / global_policy). Float32 until set.
void SetGlobalPolicy(const DTypePolicy& policy);
DTypePolicy GlobalPolicy();

}  // namespace sluice::nn

#endif  // SLUICE_NN_POLICY_H_
