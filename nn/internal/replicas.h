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
  struct One {
    Sequential* model = nullptr;
    std::unique_ptr<Sequential> owned;  // replicas 1..: clones
    Communicator* comm = nullptr;
    std::unique_ptr<CrossDeviceOps> ops;
    bool flat_gradients = false;  // FlattenGradients done
  };
  std::vector<One> local;
  std::shared_ptr<Strategy> strategy;

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
