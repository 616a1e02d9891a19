// Sequential: a stack of layers with Keras's compile / fit / evaluate /
// predict, and the pieces of a custom training loop (ComputeGradients +
// Optimizer::ApplyGradients, the tutorials' GradientTape pattern).
//
//   nn::Sequential model;
//   model.Add<nn::Rescaling>(1.0f / 255);
//   model.Add<nn::Flatten>();
//   model.Add<nn::Dense>(128, nn::DenseOptions{.activation = nn::Activation::kRelu});
//   model.Add<nn::Dense>(10);
//   model.Compile({.optimizer = std::make_shared<nn::Adam>(),
//                  .loss = std::make_shared<nn::SparseCategoricalCrossentropy>(true),
//                  .metrics = {std::make_shared<nn::SparseCategoricalAccuracy>()}});
//   auto history = model.Fit(train, {.epochs = 5, .validation_data = test});
//
// Batches are pipeline Elements: (x, y) as components 0 and 1, or the
// components FitOptions names. Fit and Evaluate move them to the model's
// device through MakeBatchFeed (nn/batch_feed.h): in place on the CPU,
// prefetched on a copy stream of their own on a GPU.
//
// A Sequential is a Layer (models nest) and a Trackable whose checkpoint
// structure is a Keras 3 Sequential's (`_functional/_operations/<i>`, with
// the input layer at 0), so TensorFlow and sluice restore each other's
// checkpoints (docs/checkpoint.md).
//
// Ownership: the model owns its layers; compile() shares the optimizer,
// loss and metrics with the caller. Thread-safety: none; one thread trains.
#ifndef SLUICE_NN_SEQUENTIAL_H_
#define SLUICE_NN_SEQUENTIAL_H_

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/nn/batch_feed.h"
#include "sluice/nn/layer.h"
#include "sluice/nn/losses.h"
#include "sluice/nn/metrics.h"
#include "sluice/nn/optimizers.h"
#include "sluice/nn/strategy.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/iterator.h"

namespace sluice {
class SummaryWriter;
}

namespace sluice::nn {

class Sequential;
class Strategy;

// A training step recorded once and replayed (Sequential::CaptureTrainStep).
// Ownership: refers to its model, which must outlive it. Thread-safety: none.
class CapturedTrainStep {
 public:
  // TrainStep on (x, y), replaying the recorded step: the batch goes into
  // the recorded inputs, the work runs as one launch, the loss is read
  // and the metrics updated. x and y must have the dtypes and shapes of the
  // batch the step was captured with (InvalidArgument otherwise).
  Result<double> Run(const Tensor& x, const Tensor& y);
  Result<double> Run(const DeviceTensor& x, const DeviceTensor& y);
  // Operations in the recording.
  int64_t num_nodes() const { return work_->num_nodes(); }
  // Whether Run takes (x, y): the dtypes and shapes of the capture's batch.
  bool Accepts(const Tensor& x, const Tensor& y) const;
  bool Accepts(const DeviceTensor& x, const DeviceTensor& y) const;
  // The loss of the eager step CaptureTrainStep took on its batch.
  double first_loss() const { return first_loss_; }

 private:
  friend class Sequential;
  CapturedTrainStep() = default;
  // InvalidArgument naming x or y if a batch's dtypes or shapes differ
  // from the captured batch's.
  Status CheckBatch(DType x_dtype, const Shape& x_shape, DType y_dtype, const Shape& y_shape) const;
  Result<double> Replay();

  Sequential* model_ = nullptr;
  std::unique_ptr<CapturedWork> work_;
  DeviceTensor x_, y_;                      // the inputs the recording reads
  DeviceTensor per_example_, predictions_;  // what it writes
  double first_loss_ = 0;
};

struct CompileOptions {
  std::shared_ptr<Optimizer> optimizer;
  std::shared_ptr<Loss> loss;
  std::vector<std::shared_ptr<Metric>> metrics;
  // Data-parallel training over the strategy's replicas (nn/strategy.h):
  // Fit and Evaluate then take the strategy's DistributedDataset. This
  // model is local replica 0 (on the strategy's first local device); the
  // others are its clones, each with a clone of the optimizer and metrics
  // (the loss is shared: losses are stateless).
  std::shared_ptr<Strategy> strategy;
};

// What one training step left behind, for callbacks.
struct StepInfo {
  int epoch = 0;            // from 0
  int64_t step = 0;         // in the epoch, from 0
  int64_t global_step = 0;  // optimizer iterations after the step
  double loss = 0;          // this batch's
  int64_t batch_size = 0;
  // The iterator fit() reads, to checkpoint its state: its position is just
  // past this step's batch. On a GPU (FitOptions::prefetch_to_device >= 1)
  // it is the iterator of data.map(x, y, {.name = "fit_select"})
  // .prefetch_to_device(device, n), whose state holds the batches copied
  // ahead (they are read again after a restore).
  Iterator* iterator = nullptr;
};

struct FitOptions {
  int epochs = 1;
  // Evaluated after each epoch; its results appear as "val_<name>". Under
  // a strategy, by local replica 0 alone (Evaluate(const Dataset&)).
  std::optional<Dataset> validation_data;
  // The same under a strategy, evaluated by every replica on its own
  // dataset (Strategy::DistributeDatasets); used instead of
  // validation_data. InvalidArgument for Fit without a strategy.
  std::optional<DistributedDataset> distributed_validation_data;
  // Steps per epoch; 0 runs each epoch to the end of the dataset. With a
  // count, one iterator continues across epochs (for repeated datasets).
  int64_t steps_per_epoch = 0;
  // 0 silent; 1 progress bar; 2 one line per epoch; -1 (default) a bar on
  // a terminal and lines otherwise. Printed to `out`.
  int verbose = -1;
  FILE* out = stdout;
  // Train with a recorded step (Sequential::CaptureTrainStep), as Keras's
  // fit runs its step as a tf.function: recorded on the first batch,
  // replayed for every later batch of its dtypes and shapes; other batches
  // (a last partial one) train eagerly. Needs a backend that records (the
  // GPU's): InvalidArgument otherwise. Under a strategy, each replica
  // records its step in two pieces (forward and backward; the optimizer's
  // update) on the batch after its first eager step, and the gradient
  // all-reduce runs eagerly between the two replays.
  bool capture = false;
  // Which components are x and y; "" takes components 0 and 1.
  std::string x_name, y_name;
  // Batches fit() and evaluate() may have on the model's device ahead of
  // the step (MakeBatchFeed). On a GPU, a prefetch_to_device stage copies
  // x and y of batch N+1 on a stream of its own while step N runs. 0: each
  // batch is copied when it is read, on the backend's stream. The CPU
  // backend reads batches in place either way.
  int64_t prefetch_to_device = 2;
  // TensorBoard: every `log_every_steps` steps writes loss, metrics,
  // examples/s, the input-wait fraction and each pipeline stage's busy
  // time and parallelism; per epoch the epoch results. Not owned.
  SummaryWriter* summary_writer = nullptr;
  int64_t log_every_steps = 100;
  // Called after every step (a non-OK status stops fit() with it).
  std::function<Status(const StepInfo&)> on_batch_end;
  // Called after every epoch with its results.
  std::function<Status(int epoch, const std::map<std::string, double>&)> on_epoch_end;
};

struct History {
  // Per epoch: "loss", each metric, "val_loss", "val_<metric>".
  std::map<std::string, std::vector<double>> history;
  // Over the whole fit: examples per second of training, and the fraction
  // of wall time the training loop spent waiting for the next batch.
  double examples_per_second = 0;
  double input_wait_fraction = 0;
  int64_t steps = 0;
};

class Sequential : public Layer {
 public:
  explicit Sequential(std::string name = "sequential");
  ~Sequential() override;

  // Appends a layer; its name is made unique in the model ("dense",
  // "dense_1", ...). Returns it (owned by the model). A layer already built
  // on another device cannot join: Compile() and every call then fail,
  // naming it.
  Layer* Add(std::unique_ptr<Layer> layer);
  template <typename L, typename... Args>
  L* Add(Args&&... args) {
    return static_cast<L*>(Add(std::make_unique<L>(std::forward<Args>(args)...)));
  }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }

  Status SetDevice(Device device) override;
  // Builds every layer for inputs of `input_shape` (the batch dimension is
  // ignored) by running the stack once on zeros: model.BuildFor(Shape{1, 28,
  // 28}) makes the weights before any data, as keras's model.build.
  Status Build(const Shape& input_shape) override;
  // Keras's model.summary(): layers, output shapes, parameter counts.
  // Output shapes are known once the model has run (or BuildFor()).
  std::string Summary() const;

  // Sets the optimizer, loss and metrics fit/evaluate use.
  // InvalidArgument if optimizer or loss is missing.
  Status Compile(CompileOptions options);
  const std::shared_ptr<Optimizer>& optimizer() const { return compiled_.optimizer; }

  Result<History> Fit(const Dataset& train, FitOptions options = {});
  // Loss and metrics over the dataset (training = false). Under a strategy
  // this replica evaluates all of it alone (every process gets the same
  // result: the replicas' weights are equal).
  Result<std::map<std::string, double>> Evaluate(const Dataset& data,
                                                 const FitOptions& options = {});
  // Fit and Evaluate under the compiled strategy: every local replica reads
  // its own dataset (InvalidArgument if there are not as many as replicas),
  // the replicas of every process train in sync, and the results are over
  // all replicas. Every replica must have the same number of batches: a
  // replica that runs out first ends the epoch for all (what it left is
  // reported on stderr), never a hang; distribute() gives equal shares.
  // Evaluate counts only rows whose "sample_weight" component (if any) is
  // not 0: the padding of DistributeOptions::pad_for_eval.
  Result<History> Fit(const DistributedDataset& train, FitOptions options = {});
  Result<std::map<std::string, double>> Evaluate(const DistributedDataset& data,
                                                 const FitOptions& options = {});
  // Local replica r's model under a strategy (0: this one), once Fit or
  // Evaluate made them; nullptr otherwise.
  Sequential* replica(size_t r);
  // The model's outputs for every element's x, concatenated along the
  // batch dimension into one host tensor.
  Result<Tensor> Predict(const Dataset& data, const FitOptions& options = {});
  Result<Tensor> Predict(const Tensor& x);

  // The gradient of the compiled loss for one batch, for custom loops:
  // grads[i] belongs to variables[i] (trainable_variables() order). The
  // gradient tensors are the layers' buffers, valid until the next step.
  struct Gradients {
    double loss = 0;
    DeviceTensor predictions;
    std::vector<DeviceTensor*> grads;
    std::vector<Variable*> variables;
  };
  Result<Gradients> ComputeGradients(const Tensor& x, const Tensor& y);
  // ComputeGradients + ApplyGradients + metric updates; returns the loss.
  Result<double> TrainStep(const Tensor& x, const Tensor& y);
  // The same for a batch already on the model's device (from
  // gpu::PrefetchToDevice and the GPU image ops, say): no copy.
  // InvalidArgument if x or y is on another device.
  Result<Gradients> ComputeGradients(const DeviceTensor& x, const DeviceTensor& y);
  Result<double> TrainStep(const DeviceTensor& x, const DeviceTensor& y);

  // TrainStep recorded once and replayed, tf.function's analogue: one
  // launch per step instead of one per operation (Backend::Capture; the
  // GPU backend records CUDA graphs). Trains on (x, y) eagerly first (that
  // builds the layers and the optimizer's slots), then records the step.
  // The recording follows the optimizer's step count (Adam's bias
  // correction), but not a learning rate changed after it. InvalidArgument
  // for a backend that cannot record (the CPU's; before any training) or a
  // loss without ComputePerExample (after the eager step). Dropout draws a
  // new mask at each replay: its call count, the mask's stream, lives on
  // the device.
  Result<std::unique_ptr<CapturedTrainStep>> CaptureTrainStep(const Tensor& x, const Tensor& y);
  // The same for a batch on the model's device (copied into the recorded
  // inputs). InvalidArgument if x or y is on another device.
  Result<std::unique_ptr<CapturedTrainStep>> CaptureTrainStep(const DeviceTensor& x,
                                                              const DeviceTensor& y);
  std::vector<Variable*> trainable_variables() const;

  // Layer interface: the stack as one layer.
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;

  // Keras 3's structure: `_functional` -> `_operations` -> "0" (the input
  // layer), "1", ... the layers; plus `optimizer` once compiled.
  std::vector<Child> TrackableChildren() override;

 protected:
  // A Sequential of every layer's Clone(); nullptr if a layer has none.
  std::unique_ptr<Layer> CloneLayer() const override;

 private:
  struct Node;      // a Trackable listing fixed children
  struct Replicas;  // the strategy's local replicas (fit_distributed.cc)
  struct FitLoop;   // the one fit loop, on one device or a strategy's replicas (fit_loop.cc)
  friend struct Replicas;
  friend class CapturedTrainStep;
  Result<DeviceTensor> ToDeviceTensor(const Tensor& t);
  // Forward, loss and Backward on device tensors; g->loss is read (waits)
  // unless `per_example` is given, which then receives the per-example
  // losses instead (nothing waits: a recorded step).
  Status ForwardBackward(const DeviceTensor& x, const DeviceTensor& y, Gradients* g,
                         DeviceTensor* per_example);
  Result<std::pair<Tensor, Tensor>> SplitBatch(const Element& e, const FitOptions& o) const;
  // `data`'s (x, y) batches on the model's device (MakeBatchFeed).
  // With `weights`, a third tensor follows: the batch's "sample_weight"
  // component, or an empty tensor if it has none.
  Result<std::unique_ptr<BatchFeed>> FeedXY(const Dataset& data, const FitOptions& o,
                                            bool weights = false);
  // InvalidArgument (or FailedPrecondition) unless this model can record
  // a training step now.
  Status CheckCanCapture();
  // InvalidArgument naming `method` if x or y is not on the model's device.
  Status CheckOnModelDevice(std::string_view method, const DeviceTensor& x,
                            const DeviceTensor& y) const;
  // CaptureTrainStep on inputs the recording owns.
  Result<std::unique_ptr<CapturedTrainStep>> CaptureInto(DeviceTensor x, DeviceTensor y);
  // One Fit step: TrainStep, or with `capture` the recorded step (made on
  // the first batch, replayed for batches it accepts).
  Result<double> Step(const DeviceTensor& x, const DeviceTensor& y, bool capture,
                      std::unique_ptr<CapturedTrainStep>* captured);

  // Makes (once) and checks the local replicas of the compiled strategy.
  Result<Replicas*> PrepareReplicas();

  std::vector<std::unique_ptr<Layer>> layers_;
  std::unique_ptr<Replicas> replicas_;
  // Called by Backward as soon as layer i's gradients are ready (the
  // strategy's overlapped all-reduce); none when empty.
  std::function<Status(size_t i)> gradients_ready_;
  Status add_error_;                  // the first layer Add() could not place
  std::vector<Shape> output_shapes_;  // per layer, from the last call
  CompileOptions compiled_;
  std::unique_ptr<Node> functional_, operations_, input_layer_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_SEQUENTIAL_H_
