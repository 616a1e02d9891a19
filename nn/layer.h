// Layer: the unit of a model, as Keras's. A layer creates its weights
// lazily, from the shape of its first input (Build), computes its output
// (Call), and propagates gradients back (Backward).
//
// Custom layers subclass Layer the way the tutorials' MyLayer subclasses
// keras.layers.Layer:
//
//   class Scale : public sluice::nn::Layer {
//    public:
//     Scale() : Layer("scale") {}
//     Status Build(const Shape& in) override {
//       SLUICE_ASSIGN_OR_RETURN(w_, AddWeight("w", Shape{in.dim(in.rank() - 1)},
//                                             Initializer::Ones()));
//       return Status::OK();
//     }
//     Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
//     Result<DeviceTensor> Backward(const DeviceTensor& dy) override;
//    private:
//     Variable* w_ = nullptr;
//   };
//
// Backward(dy) receives dL/d(output of the last training-mode Call) and
// returns dL/d(input); it writes dL/dw of each trainable weight into
// gradient(w) (overwriting, not accumulating). A layer keeps what its
// backward pass needs (its input, its output) from the last Call.
//
// Weights are Variables owned by the layer and listed as its checkpoint
// dependencies under their names ("kernel", "bias"); they live on the
// layer's device, computed on by backend().
//
// Mixed precision: a layer computes in its DTypePolicy's compute dtype
// (nn/policy.h; the global policy when it was constructed). Forward() casts
// a float input of another dtype to it and Backprop() casts the gradients
// back, so Call() and Backward() see one dtype; Call() reads its weights
// through ComputeValue() and allocates its outputs in compute_dtype().
// Gradients of the weights are float32 whatever the policy.
//
// Ownership: a layer owns its weights and gradient buffers; models own
// their layers. Thread-safety: none; one training loop drives a layer.
#ifndef SLUICE_NN_LAYER_H_
#define SLUICE_NN_LAYER_H_

#include <memory>
#include <string>
#include <vector>

#include "sluice/core/device_tensor.h"
#include "sluice/core/result.h"
#include "sluice/core/shape.h"
#include "sluice/nn/backend.h"
#include "sluice/nn/initializers.h"
#include "sluice/nn/policy.h"
#include "sluice/nn/trackable.h"
#include "sluice/nn/variable.h"

namespace sluice::nn {

class Layer : public Trackable {
 public:
  explicit Layer(std::string name);
  ~Layer() override;

  const std::string& name() const { return name_; }
  // Sets the name (models make names unique: "dense", "dense_1", ...).
  void set_name(std::string name) { name_ = std::move(name); }
  bool built() const { return built_; }

  // The device weights live on; cpu by default. FailedPrecondition once
  // the layer is built.
  Device device() const { return device_; }
  virtual Status SetDevice(Device device);

  // The dtype policy; the global one (GlobalPolicy()) when the layer was
  // constructed. SetDTypePolicy is FailedPrecondition once the layer is built.
  const DTypePolicy& dtype_policy() const { return policy_; }
  Status SetDTypePolicy(const DTypePolicy& policy);
  // dtype_policy().compute_dtype(): the dtype of Call()'s input and output.
  DType compute_dtype() const { return policy_.compute_dtype(); }

  // Builds the layer from x's shape on the first call, casts a float x to
  // compute_dtype(), then runs Call(). `training` selects training
  // behaviour (dropout) and keeps what Backward() needs.
  Result<DeviceTensor> Forward(const DeviceTensor& x, bool training = false);
  // Backward() for the last training-mode Forward(): dy is cast to the
  // dtype of that call's output, and dx to the dtype of its input.
  Result<DeviceTensor> Backprop(const DeviceTensor& dy);
  // Builds without data (as keras's layer.build(input_shape)); the batch
  // dimension of `input_shape` is ignored. FailedPrecondition if built.
  Status BuildFor(const Shape& input_shape);

  // --- Subclass interface ----------------------------------------------------
  // Creates the weights with AddWeight(). Called once, before the first
  // Call(). The default creates nothing.
  virtual Status Build(const Shape& input_shape);
  virtual Result<DeviceTensor> Call(const DeviceTensor& x, bool training) = 0;
  // dL/dx from dL/dy for the last training-mode Call(); writes the trainable
  // weights' gradients. FailedPrecondition if there was no such call.
  virtual Result<DeviceTensor> Backward(const DeviceTensor& dy) = 0;
  // Keras's layer config summary for Sequential::Summary(), e.g. "32 3x3 relu".
  virtual std::string Describe() const { return ""; }
  // A new, unbuilt layer with this one's configuration (options, name,
  // dtype policy) and none of its state: how strategies make the replicas
  // of a model. nullptr if the layer does not implement CloneLayer().
  std::unique_ptr<Layer> Clone() const;

  // Weights in creation order, and the trainable ones with their gradients
  // (parallel vectors).
  std::vector<Variable*> weights() const;
  std::vector<Variable*> trainable_weights() const;
  std::vector<DeviceTensor*> gradients();
  int64_t CountParams() const;

  // Whether Backward() must compute dL/dx. A model clears it for each
  // layer that no layer with trainable weights precedes (its input is data,
  // or derived from data alone); Backward() may then return an empty tensor.
  bool input_gradient_needed() const { return input_gradient_needed_; }
  void set_input_gradient_needed(bool needed) { input_gradient_needed_ = needed; }

  // The weights by name.
  std::vector<Child> TrackableChildren() override;

 protected:
  // The configuration part of Clone(); the built-in layers implement it,
  // custom layers may (the default returns nullptr).
  virtual std::unique_ptr<Layer> CloneLayer() const { return nullptr; }
  // Creates a weight of `shape` on the layer's device, initialized from a
  // generator derived from the global seed (SetRandomSeed) and the order in
  // which layers build, with a zeroed gradient buffer if trainable.
  Result<Variable*> AddWeight(const std::string& name, const Shape& shape, const Initializer& init,
                              bool trainable = true);
  // The value of weight `w` in compute_dtype(): the variable's own float32
  // tensor, or a bfloat16 copy of it made now (as Keras's autocast
  // variables: read once per Call, kept by the layer for Backward).
  Result<DeviceTensor> ComputeValue(const Variable* w);
  // Models set false: they pass inputs and gradients on to their layers,
  // which cast for themselves.
  void set_autocast(bool autocast) { autocast_ = autocast; }
  // The gradient buffer of trainable weight `w` (same shape).
  DeviceTensor& gradient(const Variable* w);
  // The layer's backend; valid from Build() on.
  Backend& backend() const { return *backend_; }
  // The generator AddWeight draws from (also for a layer's own randomness).
  Rng& rng() { return rng_; }

 private:
  Status EnsureBuilt(const Shape& input_shape);
  // x itself when it is not a float tensor or already `dtype`, else x cast
  // to `dtype` (float32 or bfloat16; others leave x as it is).
  Result<DeviceTensor> CastFloat(const DeviceTensor& x, DType dtype);

  std::string name_;
  Device device_;
  Backend* backend_ = nullptr;
  bool built_ = false;
  bool input_gradient_needed_ = true;
  DTypePolicy policy_ = GlobalPolicy();
  bool autocast_ = true;
  // Dtypes of the last training-mode Forward's input (before the cast) and
  // output, for Backprop.
  DType forward_in_ = DType::kFloat32;
  DType forward_out_ = DType::kFloat32;
  Rng rng_{0};
  struct Weight {
    std::unique_ptr<Variable> variable;
    DeviceTensor gradient;  // empty if not trainable
  };
  std::vector<Weight> weights_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_LAYER_H_
