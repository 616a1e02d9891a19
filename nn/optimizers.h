// Optimizers: SGD (momentum, Nesterov) and Adam, with Keras's formulas and
// defaults, and ApplyGradients(grads, variables) for custom training loops
// (the tutorials' GradientTape pattern).
//
// An optimizer creates its per-variable state (momentum, Adam's m and v)
// on the first ApplyGradients() for a variable, zero-initialized on the
// variable's device. It is checkpointed with the same object structure as a
// Keras 3 optimizer (`_iterations`, `_learning_rate`, `_variables`,
// `_trainable_variables`, `_momentums`/`_velocities` or `momentums`), so
// checkpoints move between sluice and TensorFlow in both directions
// (docs/checkpoint.md).
//
// Ownership: the optimizer owns its state variables; it refers to, never
// owns, the variables it updates (they must outlive it). Thread-safety:
// none.
#ifndef SLUICE_NN_OPTIMIZERS_H_
#define SLUICE_NN_OPTIMIZERS_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sluice/nn/backend.h"
#include "sluice/nn/trackable.h"
#include "sluice/nn/variable.h"

namespace sluice::nn {

class Optimizer : public Trackable {
 public:
  ~Optimizer() override;
  virtual std::string name() const = 0;

  // Applies grads[i] to variables[i]; both lists the same length, each
  // gradient of its variable's shape and device. InvalidArgument otherwise
  // (naming the variable). Increments iterations().
  Status ApplyGradients(std::span<DeviceTensor* const> grads, std::span<Variable* const> variables);
  Status ApplyGradients(std::span<const DeviceTensor> grads, std::span<Variable* const> variables);

  // Creates the state (slots) of `variables` now rather than at their first
  // update, and applies what a restore kept for them (Keras's
  // optimizer.build): a restored optimizer can be checked, or copied to
  // replicas, before training. Variables already tracked are skipped.
  Status Build(std::span<Variable* const> variables);
  // Every variable the optimizer keeps, in Keras's `_variables` order:
  // iterations, learning rate, then each tracked variable's slots.
  std::vector<Variable*> variables() const;
  // A new optimizer of the same kind and hyperparameters, without state
  // (strategies give each replica one). nullptr if not implemented.
  virtual std::unique_ptr<Optimizer> Clone() const { return nullptr; }

  // Completed updates (Keras's optimizer.iterations).
  int64_t iterations() const;

  // For captured steps (Sequential::CaptureTrainStep). The step count
  // lives on the host and, as an int64 counter, on the variables' device,
  // where the updates read it (so a replayed update follows it).
  // SyncStepCounter() writes iterations() into the counter if they differ
  // (after a checkpoint restore, say); AdvanceIterations(n) accounts for n
  // updates that ran on the device without passing through ApplyGradients
  // (n = -1 undoes the count of an update that was only recorded).
  Status SyncStepCounter();
  void AdvanceIterations(int64_t n);
  float learning_rate() const;
  void set_learning_rate(float lr);

  std::vector<Child> TrackableChildren() override;

 protected:
  explicit Optimizer(float learning_rate);
  // Names of the per-variable state slots ("m", "v"; "momentum"), in the
  // order Keras keeps them in `_variables`.
  virtual std::vector<std::string> SlotNames() const = 0;
  // Keras's attribute names listing each slot kind (`_momentums`, ...).
  virtual std::vector<std::string> SlotListNames() const = 0;
  // One update of `var` from `grad` with its slots (SlotNames() order).
  // `step` counts from 1; `step_counter` holds it on the device (an update
  // that depends on the step reads it from there).
  virtual Status Update(Backend& backend, const DeviceTensor& grad, Variable* var,
                        std::span<Variable* const> slots, int64_t step,
                        const DeviceTensor& step_counter) = 0;

 private:
  struct Tracked;   // a variable this optimizer updates, with its slots
  struct ListNode;  // a Trackable listing children "0", "1", ...
  Status Track(Variable* var);

  std::unique_ptr<Variable> iterations_;     // int64 scalar, host
  DeviceTensor step_counter_;                // int64 scalar, on the variables' device
  int64_t counter_holds_ = -1;               // what step_counter_ holds; -1: unknown
  std::unique_ptr<Variable> learning_rate_;  // float32 scalar, host
  std::vector<std::unique_ptr<Tracked>> tracked_;
  std::unique_ptr<ListNode> variables_node_, trainable_node_, indices_node_;
  std::vector<std::unique_ptr<ListNode>> slot_lists_;
};

// velocity = momentum · velocity - lr · g; w += velocity (or, Nesterov,
// w += momentum · velocity - lr · g). Keras's defaults: lr 0.01, no momentum.
class SGD : public Optimizer {
 public:
  explicit SGD(float learning_rate = 0.01f, float momentum = 0.0f, bool nesterov = false);
  std::string name() const override { return "SGD"; }
  std::unique_ptr<Optimizer> Clone() const override {
    return std::make_unique<SGD>(learning_rate(), momentum_, nesterov_);
  }

 protected:
  std::vector<std::string> SlotNames() const override;
  std::vector<std::string> SlotListNames() const override;
  Status Update(Backend& backend, const DeviceTensor& grad, Variable* var,
                std::span<Variable* const> slots, int64_t step,
                const DeviceTensor& step_counter) override;

 private:
  float momentum_;
  bool nesterov_;
};

// Kingma & Ba with Keras's defaults (lr 0.001, β1 0.9, β2 0.999, ε 1e-7).
class Adam : public Optimizer {
 public:
  explicit Adam(float learning_rate = 0.001f, float beta_1 = 0.9f, float beta_2 = 0.999f,
                float epsilon = 1e-7f);
  std::string name() const override { return "Adam"; }
  std::unique_ptr<Optimizer> Clone() const override {
    return std::make_unique<Adam>(learning_rate(), beta_1_, beta_2_, epsilon_);
  }

 protected:
  std::vector<std::string> SlotNames() const override { return {"m", "v"}; }
  std::vector<std::string> SlotListNames() const override { return {"_momentums", "_velocities"}; }
  Status Update(Backend& backend, const DeviceTensor& grad, Variable* var,
                std::span<Variable* const> slots, int64_t step,
                const DeviceTensor& step_counter) override;

 private:
  float beta_1_, beta_2_, epsilon_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_OPTIMIZERS_H_
