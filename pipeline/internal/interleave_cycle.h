// InterleaveCycle: where an interleave is in tf.data's interleave order.
//
// cycle_length slots are visited in turn; block_length elements are taken
// from a slot before the cycle moves to the next one, and a slot with
// nothing to give this round (empty with the input ended, or just ended)
// is passed over, starting a new block at the next. The cycle also keeps
// the input's side: the index of the next input element to open and
// whether the input has ended. It knows nothing of what the slots hold:
// the interleave iterator asks it which slot comes next and tells it what
// happened there.
//
// A value: no threads, no allocation after construction. Not thread-safe:
// the interleave iterator's mutex (InterleavePrefetcher::mu()) guards it,
// and read-ahead tasks read it under that mutex to pick the nearest slots.
#ifndef SLUICE_PIPELINE_INTERNAL_INTERLEAVE_CYCLE_H_
#define SLUICE_PIPELINE_INTERNAL_INTERLEAVE_CYCLE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "sluice/core/status.h"
#include "sluice/pipeline/internal/state.h"

namespace sluice::pipeline_internal {

class InterleaveCycle {
 public:
  // REQUIRES: cycle_length >= 1, block_length >= 1.
  InterleaveCycle(int64_t cycle_length, int64_t block_length)
      : cycle_length_(cycle_length), block_length_(block_length) {}

  int64_t cycle_length() const { return cycle_length_; }
  int64_t block_length() const { return block_length_; }

  // The slot the next element comes from.
  size_t current() const { return static_cast<size_t>(cycle_index_); }
  // The slot visited k steps after the current one (k = 0: the current),
  // the order in which slots are opened and read ahead. REQUIRES: k >= 0.
  size_t Nth(int64_t k) const { return static_cast<size_t>((cycle_index_ + k) % cycle_length_); }
  // Elements taken from the current slot's block so far.
  int64_t block_index() const { return block_index_; }

  // An element was taken from the current slot: after block_length of
  // them the cycle moves to the next slot.
  void TookElement() {
    if (++block_index_ >= block_length_) NextSlot();
  }
  // The current slot has nothing more this round: the next slot, a new block.
  void NextSlot() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % cycle_length_;
  }

  // The index in the input of the next element to open.
  int64_t next_input_index() const { return next_input_index_; }
  // An input element was taken (whether or not its dataset opened).
  void TookInput() { ++next_input_index_; }
  bool end_of_input() const { return end_of_input_; }
  void SetEndOfInput() { end_of_input_ = true; }

  // The position, the next input index and the end flag, in that order.
  void Save(StateWriter& w) const;
  // Save's inverse. DataLoss naming `stage` (and nothing changed) for a
  // position outside cycle_length/block_length.
  Status Restore(StateReader& r, const std::string& stage);

 private:
  const int64_t cycle_length_;
  const int64_t block_length_;
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
  int64_t next_input_index_ = 0;
  bool end_of_input_ = false;
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_INTERLEAVE_CYCLE_H_
