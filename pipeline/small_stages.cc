// Dataset's methods for the small stages (scan, take_while, unique, rebatch,
// random, counter, rejection_resample); each stage is in its own .cc.
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/stages.h"

namespace sluice {

namespace pi = pipeline_internal;

Dataset Dataset::scan(Element initial_state, ScanFn fn, ScanOptions options) const {
  if (!status_.ok()) return *this;
  return pi::MakeScan(*this, std::move(initial_state), std::move(fn), std::move(options));
}
Dataset Dataset::take_while(PredicateFn predicate, TakeWhileOptions options) const {
  if (!status_.ok()) return *this;
  return pi::MakeTakeWhile(*this, std::move(predicate), std::move(options));
}
Dataset Dataset::unique() const {
  if (!status_.ok()) return *this;
  return pi::MakeUnique(*this);
}
Dataset Dataset::rebatch(int64_t batch_size, RebatchOptions options) const {
  return rebatch(std::vector<int64_t>{batch_size}, std::move(options));
}
Dataset Dataset::rebatch(std::vector<int64_t> batch_sizes, RebatchOptions options) const {
  if (!status_.ok()) return *this;
  return pi::MakeRebatch(*this, std::move(batch_sizes), std::move(options));
}
Dataset Dataset::rejection_resample(ClassFn class_fn, std::vector<double> target_dist,
                                    RejectionResampleOptions options) const {
  if (!status_.ok()) return *this;
  return pi::MakeRejectionResample(*this, std::move(class_fn), std::move(target_dist),
                                   std::move(options));
}
Dataset Dataset::random(RandomOptions options) { return pi::MakeRandom(std::move(options)); }
Dataset Dataset::counter(int64_t start, int64_t step, DType dtype) {
  return pi::MakeCounter(start, step, dtype);
}

}  // namespace sluice
