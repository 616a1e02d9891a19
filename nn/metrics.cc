#include "sluice/nn/metrics.h"

namespace sluice::nn {

Status SparseCategoricalAccuracy::UpdateState(Backend& backend, const DeviceTensor& labels,
                                              const DeviceTensor& pred) {
  SLUICE_ASSIGN_OR_RETURN(int64_t correct, backend.CountArgMaxMatches(pred, labels));
  correct_ += correct;
  total_ += pred.rank() > 0 ? pred.dim(0) : 0;
  return Status::OK();
}

}  // namespace sluice::nn
