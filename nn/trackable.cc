#include "sluice/nn/trackable.h"

#include "sluice/nn/internal/checkpoint_graph.h"

namespace sluice::nn {

Trackable::Trackable() = default;
Trackable::~Trackable() = default;

Status Trackable::RestoreDeferred() {
  if (deferred_ == nullptr) return Status::OK();
  // Restore() may replace deferred_; hold the session and nodes here.
  const std::shared_ptr<nn_internal::DeferredRestore> deferred = deferred_;
  const std::vector<int> nodes = deferred->nodes;
  for (int node : nodes) SLUICE_RETURN_IF_ERROR(deferred->session->Restore(node, this));
  return Status::OK();
}

}  // namespace sluice::nn
