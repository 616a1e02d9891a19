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

namespace {
constexpr int64_t kSlowCallNs = 5'000;
}  // namespace

NextResult IteratorNode::Next() {
  ++untimed_;
  NextResult r = std::optional<Element>();
  if (--countdown_ > 0) {
    weight_ = 0;
    r = GetNext();
  } else {
    weight_ = untimed_;
    untimed_ = 0;
    const int64_t t0 = NowNs();
    r = GetNext();
    const int64_t dt = NowNs() - t0;
    counters_->total_ns.fetch_add(dt * weight_, std::memory_order_relaxed);
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    countdown_ = dt >= kSlowCallNs ? 1 : 1 + rng_ % 15;
  }
  if (r.ok() && r->has_value()) {
    counters_->elements.fetch_add(1, std::memory_order_relaxed);
    counters_->bytes.fetch_add(ElementBytes(**r), std::memory_order_relaxed);
  }
  return r;
}

WorkTimer::WorkTimer(const IteratorNode* node)
    : counters_(node->counters()), weight_(node->timing_weight()), t0_(weight_ ? NowNs() : 0) {}

WorkTimer::~WorkTimer() {
  if (weight_ == 0) return;
  const int64_t dt = (NowNs() - t0_) * weight_;
  counters_->busy_ns.fetch_add(dt, std::memory_order_relaxed);
  counters_->total_ns.fetch_sub(dt, std::memory_order_relaxed);
}

std::optional<NextResult> IteratorNode::NextStacked(int64_t n) {
  const int64_t t0 = NowNs();
  std::optional<NextResult> r = GetNextStacked(n);
  if (!r) return r;
  counters_->total_ns.fetch_add(NowNs() - t0, std::memory_order_relaxed);
  if (r->ok() && (*r)->has_value()) {
    const Element& e = ***r;
    counters_->elements.fetch_add(StackedCount(e), std::memory_order_relaxed);
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
