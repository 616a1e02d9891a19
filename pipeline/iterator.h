// Iterator: one pass over a Dataset, running its stages.
//
// Made by Dataset::iterator(). It owns the running pipeline: a task arena
// capped at the CPU budget, a TBB flow graph for the asynchronous stages,
// their bounded buffers (charged to the RAM budget) and the autotuner.
// Destroying it cancels the pipeline and returns within 100 ms: no new work
// starts and queued tasks are abandoned. A map or generator call already
// running cannot be interrupted (MapContext::cancelled lets a slow one stop
// early): if one has not returned within 20 ms, the destructor returns
// anyway and the pipeline's stages, functions and buffers are freed on a
// background thread once the call returns (process exit waits for it). Such
// a call must therefore not use objects its caller destroys right after the
// iterator; capture them by value or shared_ptr.
//
// Thread-safety: next(), save() and restore() must not be called
// concurrently with each other (one consumer). stats() and WriteTrace() may
// be called from any thread at any time. Movable, not copyable.
#ifndef SLUICE_PIPELINE_ITERATOR_H_
#define SLUICE_PIPELINE_ITERATOR_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/pipeline/stats.h"

namespace sluice {

namespace pipeline_internal {
class DatasetNode;
class IteratorContext;
class IteratorNode;
}  // namespace pipeline_internal

class Iterator {
 public:
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next element; nullopt at the end of the data (and on every later
  // call). An error names the stage and, when known, the element's origin
  // (file, record); after one, the iterator is finished (next() repeats the
  // error) unless the pipeline has an ignore_errors stage.
  Result<std::optional<Element>> next();

  // The iterator's position as bytes: restoring them into a fresh iterator
  // of the same Dataset (restore()) yields exactly the remaining elements.
  // Asynchronous stages pause while saving.
  Result<std::string> save();
  // REQUIRES: nothing has been read from this iterator yet. InvalidArgument
  // if the bytes were saved from a different pipeline; DataLoss if they are
  // corrupt.
  Status restore(std::string_view state);

  // Per-stage counters and the autotuner's choices, now.
  IteratorStats stats() const;
  // Writes a Chrome/Perfetto trace (JSON) of each stage's activity over time
  // (busy fraction, buffer depth, parallelism, autotuner decisions), under a
  // temporary name renamed on success.
  Status WriteTrace(const std::string& path) const;

 private:
  friend class Dataset;
  Iterator(std::shared_ptr<const pipeline_internal::DatasetNode> dataset,
           std::shared_ptr<pipeline_internal::IteratorContext> ctx,
           std::unique_ptr<pipeline_internal::IteratorNode> root);
  // Cancels and destroys the pipeline (now, or on the reaper's thread when
  // a call is slow to return); leaves this iterator empty.
  void Shutdown();

  // Keeps the graph alive: stage iterators refer to their nodes.
  std::shared_ptr<const pipeline_internal::DatasetNode> dataset_;
  std::shared_ptr<pipeline_internal::IteratorContext> ctx_;
  std::unique_ptr<pipeline_internal::IteratorNode> root_;
  bool started_ = false;
  Status error_;  // the first error; next() repeats it
};

}  // namespace sluice

#endif  // SLUICE_PIPELINE_ITERATOR_H_
