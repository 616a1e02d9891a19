// Stacking rows into batches: the copy kernel behind batch and padded_batch.
#ifndef SLUICE_PIPELINE_INTERNAL_STACK_H_
#define SLUICE_PIPELINE_INTERNAL_STACK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"

namespace sluice::pipeline_internal {

// Cardinality of batches of `bs` over `n` elements (a count, or unknown /
// infinite passed through).
inline int64_t BatchedCardinality(int64_t n, int64_t bs, bool drop_remainder) {
  if (n < 0) return n;
  return drop_remainder ? n / bs : (n + bs - 1) / bs;
}

// Stacks component `c` of every element into one tensor with a new first
// dimension. InvalidArgument naming `stage`, the component and the two
// shapes if rows differ in dtype or shape. `parallel` copies rows with
// several threads (of the current task arena).
Result<Tensor> StackComponent(const std::vector<Element>& rows, size_t c, const std::string& stage,
                              bool parallel);

// Stacks whole elements (names from the first). REQUIRES: !rows.empty().
Result<Element> StackElements(const std::vector<Element>& rows, const std::string& stage,
                              bool parallel);

// Concatenates batches along their first dimension (the pieces a stacked
// read returned, see IteratorNode::NextStacked); names and origin from the
// first. InvalidArgument naming `stage` if pieces differ in dtype or row
// shape. REQUIRES: !pieces.empty().
Result<Element> ConcatBatches(const std::vector<Element>& pieces, const std::string& stage);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_STACK_H_
