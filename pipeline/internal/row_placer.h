// RowPlacer: map-and-batch fusion. A map stage whose consumer is batch(n)
// copies each output's big components into the slot they will have in the
// batch, in a buffer shared by the n elements of that batch, and passes on
// views of those slots. When batch then finds its rows back to back in one
// allocation, in order, it returns a view of it instead of copying
// (StackComponent). The copy is thus made by the map's workers, in
// parallel, while the output is still in their cache, and the batch stage
// copies nothing (tf.data's map_and_batch_fusion, without changing what any
// stage returns).
//
// Element `index` of the map's input goes to batch index / n, row index % n;
// batch(n) takes the map's outputs in order, so the rows line up unless
// something shifts them (an error returned in place of an element, a
// restore at an unaligned position). Then the batch sees rows from
// different buffers and copies them as usual: placement never changes a
// result, only who copies. A slot is written at most once, so a view handed
// out is never overwritten.
//
// Only components of at least kMinBytes are placed (copying small ones is
// cheap anywhere), numeric only, in batches of at most kMaxBatchBytes. The
// buffer of a batch is allocated by its first element, with that element's
// dtype and shape per component; rows that differ are left in their own
// buffers (batch then reports the mismatch as usual). Buffers are let go
// when all n elements were seen, or when more than kMaxOpen batches are
// open (the oldest first): memory stays within what the unfused stages
// would hold.
//
// Thread-safe: workers call Place concurrently.
#ifndef SLUICE_PIPELINE_INTERNAL_ROW_PLACER_H_
#define SLUICE_PIPELINE_INTERNAL_ROW_PLACER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "sluice/core/buffer.h"
#include "sluice/core/element.h"
#include "sluice/core/tensor.h"

namespace sluice::pipeline_internal {

class RowPlacer {
 public:
  static constexpr size_t kMinBytes = 4096;
  static constexpr size_t kMaxOpen = 64;
  // Bigger batches are not placed (batch copies them as usual).
  static constexpr size_t kMaxBatchBytes = size_t{2} << 30;

  // REQUIRES: rows_per_batch >= 1.
  explicit RowPlacer(int64_t rows_per_batch) : rows_(rows_per_batch) {}

  // Copies the placeable components of `e`, the output for input element
  // `index`, into their batch slots and makes them views of those slots.
  // Components it cannot place (small, strings, a dtype or shape unlike the
  // batch's first row, a slot already used, an allocation failure) are left
  // as they are.
  void Place(int64_t index, Element& e);
  // Claims the slot of component `component` of input element `index` for a
  // tensor of `dtype` and `shape` before the element is computed (the map
  // function writes its output there: MapContext::AllocateOutput): a view
  // of the slot, or nullopt where Place would not place such a tensor or the
  // slot is taken. Place then finds the slot used and leaves the component
  // as it is, which is that view if the function returned it.
  std::optional<Tensor> Reserve(int64_t index, size_t component, DType dtype, const Shape& shape);
  // Counts input element `index` as seen without an output (its function
  // failed), so its batch's buffers can be let go.
  void Skip(int64_t index);
  // Batches open now (for tests).
  size_t open() const;

 private:
  struct Column {
    bool tried = false;  // the batch's first row of this component came
    Buffer buffer;       // null: too big, or the allocation failed
    DType dtype = DType::kFloat32;
    Shape shape;
    std::vector<bool> used;
  };
  struct Open {
    std::vector<Column> columns;  // by component
    int64_t seen = 0;
  };
  // REQUIRES: mu_ held. The open batch `b`, made if new.
  Open& OpenLocked(int64_t b);
  // REQUIRES: mu_ held. Marks row `row` of component `c` of batch `o` used
  // for a tensor of `dtype` and `shape` (`bytes` of them) and returns the
  // component's buffer; a null buffer if it cannot be placed there.
  Buffer ClaimLocked(Open& o, size_t c, size_t row, DType dtype, const Shape& shape, size_t bytes);
  // REQUIRES: mu_ held. Counts one element of `b`; lets it go when all seen.
  void SeenLocked(int64_t b);

  const int64_t rows_;
  mutable std::mutex mu_;
  std::map<int64_t, Open> open_;  // by batch number
  // open_.size(), readable without mu_ (a hint: nothing to count when 0).
  std::atomic<size_t> open_count_{0};
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_ROW_PLACER_H_
