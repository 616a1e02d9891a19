// Variable: a named, mutable DeviceTensor a model trains or an optimizer
// keeps (weights, biases, slots, step counters), checkpointed as
// "VARIABLE_VALUE".
//
// Ownership: the Variable owns its value (a DeviceTensor handle; layers and
// optimizers update it in place). Thread-safety: none.
#ifndef SLUICE_NN_VARIABLE_H_
#define SLUICE_NN_VARIABLE_H_

#include <string>
#include <vector>

#include "sluice/core/device_tensor.h"
#include "sluice/nn/trackable.h"

namespace sluice::nn {

class Variable : public Trackable {
 public:
  // `name` is for messages and summaries ("dense/kernel"); the checkpoint
  // key comes from the object graph.
  Variable(std::string name, DeviceTensor value, bool trainable = true);
  // A variable on the CPU holding `host` (its bytes are the variable's from
  // then on, updated in place): a step counter, say,
  //   nn::Variable step("step", Tensor::Scalar<int64_t>(0), /*trainable=*/false);
  Variable(std::string name, Tensor host, bool trainable = true);

  const std::string& name() const { return name_; }
  bool trainable() const { return trainable_; }
  DeviceTensor& value() { return value_; }
  const DeviceTensor& value() const { return value_; }
  const Shape& shape() const { return value_.shape(); }
  DType dtype() const { return value_.dtype(); }

  // The value copied to the host.
  Result<Tensor> Read() const;
  // Copies `host` into the value. InvalidArgument naming the variable if the
  // dtype or shape differs.
  Status Assign(const Tensor& host);

  // "VARIABLE_VALUE": Read() / Assign().
  std::vector<Attribute> TrackableAttributes() override;

 private:
  std::string name_;
  DeviceTensor value_;
  bool trainable_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_VARIABLE_H_
