#include "sluice/pipeline/internal/node.h"

#include "sluice/pipeline/internal/context.h"

namespace sluice::pipeline_internal {

int64_t ElementBytes(const Element& e) {
  int64_t n = 0;
  for (const Tensor& t : e.components()) {
    n += static_cast<int64_t>(t.byte_size());
    if (t.dtype() == DType::kString) {
      for (std::string_view s : t.flat<std::string_view>()) n += static_cast<int64_t>(s.size());
    }
  }
  return n;
}

NextResult IteratorNode::Next() {
  const int64_t t0 = NowNs();
  NextResult r = GetNext();
  counters_->total_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed);
  if (r.ok() && r->has_value()) {
    counters_->elements.fetch_add(1, std::memory_order_relaxed);
    counters_->bytes.fetch_add(ElementBytes(**r), std::memory_order_relaxed);
  }
  return r;
}

std::optional<NextResult> IteratorNode::NextStacked(int64_t n) {
  const int64_t t0 = NowNs();
  std::optional<NextResult> r = GetNextStacked(n);
  if (!r) return r;
  counters_->total_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed);
  if (r->ok() && (*r)->has_value()) {
    const Element& e = ***r;
    const int64_t count = e.size() > 0 && e[0].shape().rank() > 0 ? e[0].shape().dim(0) : 1;
    counters_->elements.fetch_add(count, std::memory_order_relaxed);
    counters_->bytes.fetch_add(ElementBytes(e), std::memory_order_relaxed);
  }
  return r;
}

namespace {
void RegisterTree(const DatasetNode& node, IteratorContext& ctx) {
  for (const auto& in : node.inputs()) RegisterTree(*in, ctx);
  StageCounters* c = ctx.CountersFor(&node);
  if (c->inputs.empty()) {
    for (const auto& in : node.inputs()) c->inputs.push_back(ctx.CountersFor(in.get()));
  }
}
}  // namespace

Result<std::unique_ptr<IteratorNode>> MakeIteratorOf(const DatasetNode& node, IteratorContext& ctx,
                                                     const IteratorParams& params) {
  RegisterTree(node, ctx);
  return node.MakeIterator(ctx, params);
}

uint64_t MixSeed(uint64_t a, uint64_t b) {
  // SplitMix64 finalizer over a combination of both.
  uint64_t z = a + 0x9e3779b97f4a7c15ULL * (b + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace sluice::pipeline_internal
