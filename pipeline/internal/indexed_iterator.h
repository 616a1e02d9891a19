// IndexedIterator: the iterator of any random-access dataset with a known
// cardinality: element i is node.Get(i), for i = 0, 1, ... n-1. Its state is
// one cursor, and it is positional (SeekTo is O(1)). A source that reads
// faster in order than at random overrides Fetch() (TFRecordDataset reads
// runs of records).
#ifndef SLUICE_PIPELINE_INTERNAL_INDEXED_ITERATOR_H_
#define SLUICE_PIPELINE_INTERNAL_INDEXED_ITERATOR_H_

#include "sluice/pipeline/internal/context.h"
#include "sluice/pipeline/internal/node.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {

class IndexedIterator : public IteratorNode {
 public:
  IndexedIterator(IteratorContext& ctx, const DatasetNode& node)
      : IteratorNode(&ctx, ctx.CountersFor(&node)), node_(node), n_(node.cardinality()) {}

  Status Save(StateWriter& w) override {
    w.Tag(node_.kind());
    w.I64(next_);
    return Status::OK();
  }
  Status Restore(StateReader& r) override {
    SLUICE_RETURN_IF_ERROR(r.Tag(node_.kind()));
    SLUICE_ASSIGN_OR_RETURN(int64_t next, r.I64());
    return SeekTo(next);
  }
  bool positional() const override { return true; }
  int64_t position() const override { return next_; }
  Status SeekTo(int64_t n) override {
    if (n < 0) {
      return Status::OutOfRange(node_.name() + ": negative position " + std::to_string(n));
    }
    next_ = std::min(n, n_);  // past the end: at the end
    return Status::OK();
  }

 protected:
  // An element that fails is still passed: the next call moves on to the
  // one after it (so ignore_errors skips exactly the failed element).
  NextResult GetNext() override {
    if (next_ >= n_) return std::optional<Element>();
    Result<Element> e = Fetch(next_++);
    if (!e.ok()) return e.status();
    return std::optional<Element>(std::move(e).value());
  }
  std::optional<NextResult> GetNextStacked(int64_t n) override {
    if (next_ >= n_) return NextResult(std::optional<Element>());
    std::optional<Result<Element>> r = FetchStacked(next_, std::min(n, n_ - next_));
    if (!r) return std::nullopt;
    if (!r->ok()) {
      ++next_;  // the element at next_ failed (see FetchStacked)
      return NextResult(r->status());
    }
    next_ += StackedCount(**r);
    return NextResult(std::optional<Element>(std::move(*r).value()));
  }
  // Element i, called for i = position() only.
  virtual Result<Element> Fetch(int64_t i) { return node_.Get(*ctx(), i); }
  // Elements i .. i + k - 1 (1 <= k <= n) stacked, for i = position() only;
  // nullopt: not supported (see IteratorNode::NextStacked). An error must be
  // element i's own: one met after k > 0 elements ends the stack before it.
  virtual std::optional<Result<Element>> FetchStacked(int64_t /*i*/, int64_t /*n*/) {
    return std::nullopt;
  }

 private:
  const DatasetNode& node_;
  const int64_t n_;
  int64_t next_ = 0;
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_INDEXED_ITERATOR_H_
