#include "sluice/pipeline/internal/sub_dataset.h"

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/errors.h"

namespace sluice::pipeline_internal {

SubDataset::SubDataset(Dataset ds, IteratorContext* ctx) : ds_(std::move(ds)), ctx_(ctx) {}

SubDataset& SubDataset::operator=(SubDataset&& o) noexcept {
  if (this != &o) {
    if (ctx_) ctx_->UnregisterTree(*ds_.node());
    ds_ = std::move(o.ds_);
    ctx_ = o.ctx_;
    o.ctx_ = nullptr;
  }
  return *this;
}

SubDataset::~SubDataset() {
  if (ctx_) ctx_->UnregisterTree(*ds_.node());
}

Result<SubIterator> OpenSubDataset(const DatasetFn& fn, const Element& e, int64_t index,
                                   IteratorContext& ctx, const IteratorParams& parent,
                                   const DatasetNode& stage) {
  auto fail = [&](const Status& s) {
    return StageError(s, stage.name(), index, e.origin_source(), e.origin_index());
  };
  Result<Dataset> ds = fn(e);
  if (!ds.ok()) return fail(ds.status());
  if (!ds->status().ok()) return fail(ds->status());
  IteratorParams p;
  p.iteration = MixSeed(parent.iteration, static_cast<uint64_t>(index));
  ctx.RegisterTree(*ds->node(), ctx.KeyOf(&stage));
  SubDataset held(std::move(ds).value(), &ctx);
  Result<std::unique_ptr<IteratorNode>> it = MakeIteratorOf(*held.dataset().node(), ctx, p);
  if (!it.ok()) return fail(it.status());
  return SubIterator{std::move(held), std::move(it).value()};
}

}  // namespace sluice::pipeline_internal
