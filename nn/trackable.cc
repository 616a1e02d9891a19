#include "sluice/nn/trackable.h"

namespace sluice::nn {

Trackable::Trackable() = default;
Trackable::~Trackable() = default;

// TEMPORARY until the checkpoint implementation lands.
Status Trackable::RestoreDeferred() { return Status::OK(); }

}  // namespace sluice::nn
