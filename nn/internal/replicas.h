// Sequential::Replicas: the local replicas of a model trained under a
// Strategy (fit_distributed.cc). Internal to nn.
#ifndef SLUICE_NN_INTERNAL_REPLICAS_H_
#define SLUICE_NN_INTERNAL_REPLICAS_H_

#include <memory>
#include <vector>

#include "sluice/nn/cross_device_ops.h"
#include "sluice/nn/sequential.h"
#include "sluice/nn/strategy.h"

namespace sluice::nn {

struct Sequential::Replicas {
  // A replica's training step recorded in two pieces around its gradient
  // all-reduce, which runs eagerly between them (FitOptions::capture under
  // a strategy): the host-staged MPI and reduce-to-one-device paths cannot
  // be recorded, and the pieces still take a step's launches off the host.
  // Recorded on the first batch after the replicas' first eager step (which
  // builds the optimizer's slots), replayed for every later batch of the
  // same dtypes and shapes.
  struct Captured {
    std::unique_ptr<CapturedWork> gradients;  // forward, loss, backward
    std::unique_ptr<CapturedWork> apply;      // the optimizer's update
    DeviceTensor x, y;                        // the inputs the recording reads
    DeviceTensor per_example, predictions;    // what it writes
    std::vector<DeviceTensor> grads;          // the gradients it writes
    std::vector<DeviceTensor*> grad_ptrs;     // into grads, for the all-reduce
    std::vector<Variable*> variables;         // grads[i] is variables[i]'s

    bool Accepts(const DeviceTensor& bx, const DeviceTensor& by) const {
      return bx.dtype() == x.dtype() && bx.shape() == x.shape() && by.dtype() == y.dtype() &&
             by.shape() == y.shape();
    }
  };

  struct One {
    Sequential* model = nullptr;
    std::unique_ptr<Sequential> owned;  // replicas 1..: clones
    Communicator* comm = nullptr;
    std::unique_ptr<CrossDeviceOps> ops;
    std::unique_ptr<Captured> captured;  // with FitOptions::capture
    int64_t steps_run = 0;               // training steps taken (eager or replayed)
    bool flat_gradients = false;         // FlattenGradients done
  };
  std::vector<One> local;
  std::shared_ptr<Strategy> strategy;

  // Records m's step on batches shaped as (x, y) (Captured). Nothing runs.
  // InvalidArgument when m's backend cannot record.
  static Result<std::unique_ptr<Captured>> Record(Sequential& m, const DeviceTensor& x,
                                                  const DeviceTensor& y);
  // Replays c's forward and backward on (x, y) (copied into c's inputs);
  // the batch's loss. REQUIRES: c.Accepts(x, y).
  static Result<double> ReplayGradients(Sequential& m, Captured& c, const DeviceTensor& x,
                                        const DeviceTensor& y);
  // Replays c's optimizer update (after the all-reduce of c.grad_ptrs).
  static Status ReplayApply(Sequential& m, Captured& c);

  // Every variable the replicas keep equal: the layers' weights, then the
  // optimizer's (its slots for every trainable variable exist once built).
  static Result<std::vector<Variable*>> SyncedVariables(Sequential& m);
  // Makes replica r equal to global replica 0: host variables through the
  // communicator, device ones through the cross-device ops.
  static Status Sync(One& r);
  // On the CPU: moves the layers' gradient buffers into one buffer per
  // dtype, last layer first (the order they are all-reduced in), so that
  // every bucket lies in one piece and is reduced where it lies, without
  // packing (DDP's gradient_as_bucket_view). Once the model is built.
  static Status FlattenGradients(One& r);
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_INTERNAL_REPLICAS_H_
