// Opening the dataset a user function returns for one input element: the
// shared step of flat_map and interleave.
#ifndef SLUICE_PIPELINE_INTERNAL_SUB_DATASET_H_
#define SLUICE_PIPELINE_INTERNAL_SUB_DATASET_H_

#include <memory>
#include <string>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/internal/node.h"

namespace sluice::pipeline_internal {

// A dataset opened by a stage, registered with the context under that
// stage's key (IteratorContext::RegisterTree) for as long as it lives.
// Move-only; must outlive the iterator made from it.
class SubDataset {
 public:
  SubDataset(Dataset ds, IteratorContext* ctx);
  SubDataset(SubDataset&& o) noexcept : ds_(std::move(o.ds_)), ctx_(o.ctx_) { o.ctx_ = nullptr; }
  SubDataset& operator=(SubDataset&& o) noexcept;
  ~SubDataset();
  const Dataset& dataset() const { return ds_; }

 private:
  Dataset ds_;
  IteratorContext* ctx_;  // null once moved from
};

struct SubIterator {
  SubDataset dataset;  // kept alive as long as `it`, which refers to its nodes
  std::unique_ptr<IteratorNode> it;
};

// Calls fn(e) and makes the iterator of the dataset it returns, with an
// iteration number derived from the parent's and `index` (the element's
// position in the stage's input), its stages keyed under `stage`'s.
// Errors are worded for `stage` and name the element and its origin.
Result<SubIterator> OpenSubDataset(const DatasetFn& fn, const Element& e, int64_t index,
                                   IteratorContext& ctx, const IteratorParams& parent,
                                   const DatasetNode& stage);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_SUB_DATASET_H_
