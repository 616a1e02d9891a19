// Joining per-example tensors into batch tensors, for parsers that parse
// examples one by one and then batch them (SequenceExampleParser). String
// tensors keep their views; the result holds every input's string owners.
// Pure functions; thread-safe.
#ifndef SLUICE_RECORDS_INTERNAL_STACK_H_
#define SLUICE_RECORDS_INTERNAL_STACK_H_

#include <cstdint>
#include <span>

#include "sluice/core/result.h"
#include "sluice/core/tensor.h"

namespace sluice::records_internal {

// [B, row_shape...] from B tensors of `dtype` and `row_shape`. Internal
// for a row of another dtype or shape (the parsers make them).
Result<Tensor> StackRows(std::span<const Tensor> rows, DType dtype, const Shape& row_shape);
// [B, max_n, item...] from B tensors [n_b, item...], padded with zeros
// (empty strings).
Result<Tensor> StackPadded(std::span<const Tensor> rows, DType dtype, const Shape& item_shape);
// [sum n_b, item...] from B tensors [n_b, item...].
Result<Tensor> ConcatRows(std::span<const Tensor> rows, DType dtype, const Shape& item_shape);

// Row splits (int32 or int64 vectors, each starting at 0) of B examples
// joined into one: `outer` gives the examples' splits over the rows,
// [0, cumulative rows...] (rows = size - 1 of each); else the splits
// concatenated, each shifted by the previous ones' totals.
Result<Tensor> JoinSplits(std::span<const Tensor> rows, DType dtype, bool outer);

}  // namespace sluice::records_internal

#endif  // SLUICE_RECORDS_INTERNAL_STACK_H_
