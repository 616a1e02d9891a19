// DatasetNode and IteratorNode: the two halves of every pipeline stage.
//
// A DatasetNode is immutable and shared by every Dataset value and iterator
// that refers to it; it holds the stage's parameters, its inputs, its output
// spec and cardinality, and makes IteratorNodes. An IteratorNode is the
// mutable state of one pass, owned by its parent iterator (or the public
// Iterator), driven by one consumer at a time.
#ifndef SLUICE_PIPELINE_INTERNAL_NODE_H_
#define SLUICE_PIPELINE_INTERNAL_NODE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/pipeline/options.h"

namespace sluice::pipeline_internal {

class IteratorContext;
struct StageCounters;
class StateReader;
class StateWriter;

using NextResult = Result<std::optional<Element>>;

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Tensor bytes of an element (what buffers are charged for).
int64_t ElementBytes(const Element& e);

// How many elements a stacked read returned: the first dimension of its
// components (see IteratorNode::NextStacked).
inline int64_t StackedCount(const Element& e) {
  return e.size() > 0 && e[0].shape().rank() > 0 ? e[0].shape().dim(0) : 1;
}

// Per-iterator parameters passed down the chain when iterators are made.
struct IteratorParams {
  // Which iteration this is: counts iterator() calls on the root and repeat
  // epochs, mixed; shuffles with reshuffle_each_iteration seed from it.
  uint64_t iteration = 0;
  // Set by batch(n) for its direct input when that input places_rows(),
  // and by nothing else: n, so the map can write its outputs into batch
  // buffers (RowPlacer). A node that gets it does not pass it on.
  int64_t rows_per_batch = 0;
};

class IteratorNode {
 public:
  IteratorNode(IteratorContext* ctx, StageCounters* counters) : ctx_(ctx), counters_(counters) {}
  virtual ~IteratorNode() = default;
  IteratorNode(const IteratorNode&) = delete;
  IteratorNode& operator=(const IteratorNode&) = delete;

  // The next element, timed and counted for stats. One caller at a time.
  NextResult Next();
  // Up to `n` (> 0) next elements stacked as batch(n) stacks them (every
  // component gains a leading dimension: the count taken), for stages that
  // make batches without making each element (a TFRecord source: one string
  // tensor of views into its read buffer). A result without a value is the
  // end; fewer than n may come before the end (ask again). nullopt: this
  // iterator does not do it (and never will): use Next(). Timed and counted
  // like Next().
  std::optional<NextResult> NextStacked(int64_t n);
  // A hint from the consumer: it will call Next() about `n` more times
  // before it looks at what they returned (batch(n) collecting its rows). An
  // asynchronous stage may then wake it once for several ready results
  // rather than once for each. Changes no result. Default: ignored.
  virtual void ExpectNext(int64_t /*n*/) {}
  virtual Status Save(StateWriter& w) = 0;
  virtual Status Restore(StateReader& r) = 0;

  // Positional iterators can move to their n-th element (counting from the
  // start of this pass) cheaply; asynchronous stages above them then save
  // cursors instead of buffered elements. Default: not positional.
  virtual bool positional() const { return false; }
  // The index of the element Next() returns next. REQUIRES: positional().
  virtual int64_t position() const { return 0; }
  // REQUIRES: positional(). May also move backwards.
  virtual Status SeekTo(int64_t /*n*/) {
    return Status::Internal("SeekTo on a non-positional iterator");
  }

  IteratorContext* ctx() const { return ctx_; }
  StageCounters* counters() const { return counters_; }
  // Next() times a sample of its calls (a clock read costs ~25 ns, a cheap
  // stage ~100): every call that took 5 us or more, else one call in 1..15
  // at random (8 on average). A timed call counts for the calls since the
  // previous one, so totals stay unbiased. 0 while the current call is not
  // timed, else that count. Stages time their own work (WorkTimer) only in
  // timed calls.
  int64_t timing_weight() const { return weight_; }

 protected:
  virtual NextResult GetNext() = 0;
  virtual std::optional<NextResult> GetNextStacked(int64_t /*n*/) { return std::nullopt; }

 private:
  IteratorContext* ctx_;
  StageCounters* counters_;
  int64_t weight_ = 0;      // of the current call, see timing_weight()
  int64_t untimed_ = 0;     // calls since the last timed one
  uint32_t countdown_ = 1;  // calls until the next timed one
  uint32_t rng_ = 0x9e3779b9u;
};

// Times a stage's own work inside a timed Next() call: its wall time (times
// the call's weight) moves from the stage's total to its busy time.
class WorkTimer {
 public:
  explicit WorkTimer(const IteratorNode* node);
  ~WorkTimer();
  WorkTimer(const WorkTimer&) = delete;
  WorkTimer& operator=(const WorkTimer&) = delete;

 private:
  StageCounters* const counters_;
  const int64_t weight_;
  const int64_t t0_;
};

class DatasetNode : public std::enable_shared_from_this<DatasetNode> {
 public:
  DatasetNode(std::string kind, std::string name,
              std::vector<std::shared_ptr<const DatasetNode>> inputs, ElementSpec spec,
              int64_t cardinality)
      : kind_(std::move(kind)),
        name_(name.empty() ? kind_ : std::move(name)),
        inputs_(std::move(inputs)),
        spec_(std::move(spec)),
        cardinality_(cardinality) {}
  virtual ~DatasetNode() = default;

  const std::string& kind() const { return kind_; }
  // The user's name for the stage, or the kind.
  const std::string& name() const { return name_; }
  const std::vector<std::shared_ptr<const DatasetNode>>& inputs() const { return inputs_; }
  const ElementSpec& spec() const { return spec_; }
  int64_t cardinality() const { return cardinality_; }
  // "map", "batch(32)": for DebugString.
  virtual std::string Describe() const { return name_; }
  // Pipeline options set on this node (with_options), else nullptr.
  virtual const Options* options() const { return nullptr; }

  // Makes this stage's iterator (and its inputs'), registering stats.
  virtual Result<std::unique_ptr<IteratorNode>> MakeIterator(
      IteratorContext& ctx, const IteratorParams& params) const = 0;

  // Random access, for global_shuffle and record-level shard: element i of
  // one pass, computed without reading the others. Default: unsupported.
  virtual bool random_access() const { return false; }
  // True if the node's iterator honours IteratorParams::rows_per_batch.
  virtual bool places_rows() const { return false; }
  // REQUIRES: random_access(), 0 <= i < cardinality(). `seed` is the
  // pipeline seed (for random maps).
  virtual Result<Element> Get(IteratorContext& /*ctx*/, int64_t /*i*/) const {
    return Status::FailedPrecondition(name_ + " does not allow random access");
  }

  // An equivalent of this node followed by batch(batch_size, options) that
  // is cheaper to run (a map of parse_example: batch the records, then parse
  // each batch at once), or nullopt. MakeBatch builds it instead.
  virtual std::optional<Dataset> FuseWithBatch(int64_t /*batch_size*/,
                                               const BatchOptions& /*options*/) const {
    return std::nullopt;
  }
  // A source that reads files (TFRecordDataset): the files, in reading
  // order; nullptr for every other node.
  virtual const std::vector<std::string>* source_files() const { return nullptr; }
  // The same source over `files` instead. REQUIRES: source_files().
  virtual Result<std::shared_ptr<const DatasetNode>> WithSourceFiles(
      std::vector<std::string> /*files*/) const {
    return Status::FailedPrecondition(name_ + " does not read files");
  }

  // Counter of iterator() calls made on this node as a root.
  uint64_t NextIterationNumber() const { return iterations_.fetch_add(1); }

 private:
  std::string kind_;
  std::string name_;
  std::vector<std::shared_ptr<const DatasetNode>> inputs_;
  ElementSpec spec_;
  int64_t cardinality_;
  mutable std::atomic<uint64_t> iterations_{0};
};

// Makes the iterator of `node` with its stage registered in ctx.
Result<std::unique_ptr<IteratorNode>> MakeIteratorOf(const DatasetNode& node, IteratorContext& ctx,
                                                     const IteratorParams& params);

// Mixes two 64-bit values into one (for deriving seeds).
uint64_t MixSeed(uint64_t a, uint64_t b);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_NODE_H_
