#include "sluice/pipeline/internal/sub_dataset.h"

#include "sluice/pipeline/internal/errors.h"

namespace sluice::pipeline_internal {

Result<SubIterator> OpenSubDataset(const DatasetFn& fn, const Element& e, int64_t index,
                                   IteratorContext& ctx, const IteratorParams& parent,
                                   const std::string& stage) {
  auto fail = [&](const Status& s) {
    return StageError(s, stage, index, e.origin_source(), e.origin_index());
  };
  Result<Dataset> ds = fn(e);
  if (!ds.ok()) return fail(ds.status());
  if (!ds->status().ok()) return fail(ds->status());
  IteratorParams p;
  p.iteration = MixSeed(parent.iteration, static_cast<uint64_t>(index));
  Result<std::unique_ptr<IteratorNode>> it = MakeIteratorOf(*ds->node(), ctx, p);
  if (!it.ok()) return fail(it.status());
  return SubIterator{std::move(ds).value(), std::move(it).value()};
}

}  // namespace sluice::pipeline_internal
