// Stacking rows into batches: the copy kernel behind batch and padded_batch.
#ifndef SLUICE_PIPELINE_INTERNAL_STACK_H_
#define SLUICE_PIPELINE_INTERNAL_STACK_H_

#include <vector>

#include "sluice/core/element.h"
#include "sluice/core/result.h"

namespace sluice::pipeline_internal {

// Stacks component `c` of every element into one tensor with a new first
// dimension. InvalidArgument naming `stage`, the component and the two
// shapes if rows differ in dtype or shape. `parallel` copies rows with
// several threads (of the current task arena).
Result<Tensor> StackComponent(const std::vector<Element>& rows, size_t c, const std::string& stage,
                              bool parallel);

// Stacks whole elements (names from the first). REQUIRES: !rows.empty().
Result<Element> StackElements(const std::vector<Element>& rows, const std::string& stage,
                              bool parallel);

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_STACK_H_
