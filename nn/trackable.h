// Trackable: an object that a Checkpoint saves and restores, as
// TensorFlow's trackable objects are for tf.train.Checkpoint.
//
// Objects form a graph of named dependencies (a model's layers, a layer's
// kernel and bias, an optimizer's slot variables). A value's checkpoint key
// is the path of names by which a breadth-first walk from the Checkpoint
// first reaches it, then the attribute: for example
// "model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE". The graph
// itself is saved beside the values as TensorFlow's TrackableObjectGraph
// (key "_CHECKPOINTABLE_OBJECT_GRAPH"), so TensorFlow and sluice each
// restore the other's checkpoints by matching the graph, not the keys.
//
// Objects that create their dependencies lazily (a Layer builds its weights
// on the first call) call RestoreDeferred() right after creating them:
// values a Checkpoint restored before the objects existed are applied then,
// as tf.train.Checkpoint's deferred restoration does.
//
// Ownership: a Trackable does not own the children it lists; they must
// outlive any Checkpoint call that walks them. Thread-safety: none; save,
// restore and building are expected on one thread.
#ifndef SLUICE_NN_TRACKABLE_H_
#define SLUICE_NN_TRACKABLE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

namespace sluice::nn_internal {
struct DeferredRestore;  // defined by the checkpoint implementation
}  // namespace sluice::nn_internal

namespace sluice::nn {

class Trackable {
 public:
  Trackable();
  virtual ~Trackable();
  Trackable(const Trackable&) = delete;
  Trackable& operator=(const Trackable&) = delete;

  // A named dependency. Names are unique among one object's children.
  struct Child {
    std::string name;
    Trackable* object = nullptr;
  };
  // A value the object saves itself, under
  // "<path>/.ATTRIBUTES/<name>" ("VARIABLE_VALUE" for a variable,
  // "ITERATOR_STATE" for a pipeline iterator). `save` returns it as a host
  // tensor; `restore` checks and applies a loaded one (InvalidArgument for a
  // wrong dtype or shape, naming both).
  struct Attribute {
    std::string name;
    std::function<Result<Tensor>()> save;
    std::function<Status(const Tensor&)> restore;
  };
  // An optimizer's per-variable state (Adam's "m" and "v", SGD's
  // "momentum"): saved under "<path of original>/.OPTIMIZER_SLOT/<path of
  // optimizer>/<slot name>/.ATTRIBUTES/VARIABLE_VALUE".
  struct Slot {
    Trackable* original = nullptr;  // the variable the slot belongs to
    std::string name;
    Trackable* slot = nullptr;  // a Variable
  };

  // In a stable order (it decides which path names a shared object).
  virtual std::vector<Child> TrackableChildren() { return {}; }
  virtual std::vector<Attribute> TrackableAttributes() { return {}; }
  // Only optimizers have slots.
  virtual std::vector<Slot> TrackableSlots() { return {}; }

 protected:
  // Applies values that a Checkpoint restore recorded for this object's
  // dependencies before they existed. Call it after creating children,
  // attributes or slots lazily. OK when nothing is pending.
  Status RestoreDeferred();

 private:
  friend class Checkpoint;
  std::shared_ptr<nn_internal::DeferredRestore> deferred_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_TRACKABLE_H_
