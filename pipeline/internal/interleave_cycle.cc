#include "sluice/pipeline/internal/interleave_cycle.h"

namespace sluice::pipeline_internal {

void InterleaveCycle::Save(StateWriter& w) const {
  w.I64(cycle_index_);
  w.I64(block_index_);
  w.Bool(end_of_input_);
  w.I64(next_input_index_);
}

Status InterleaveCycle::Restore(StateReader& r, const std::string& stage) {
  SLUICE_ASSIGN_OR_RETURN(int64_t cycle_index, r.I64());
  SLUICE_ASSIGN_OR_RETURN(int64_t block_index, r.I64());
  SLUICE_ASSIGN_OR_RETURN(bool end_of_input, r.Bool());
  SLUICE_ASSIGN_OR_RETURN(int64_t next_input_index, r.I64());
  if (cycle_index < 0 || cycle_index >= cycle_length_ || block_index < 0 ||
      block_index >= block_length_) {
    return Status::DataLoss("iterator state: stage '" + stage +
                            "' has a cycle position outside its cycle_length/block_length");
  }
  cycle_index_ = cycle_index;
  block_index_ = block_index;
  end_of_input_ = end_of_input;
  next_input_index_ = next_input_index;
  return Status::OK();
}

}  // namespace sluice::pipeline_internal
