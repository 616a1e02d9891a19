// MapContext: what a map function may know about the element it transforms.
//
// Passed by the pipeline to functions given to Dataset::map. `index` is the
// element's position in the map stage's input (0, 1, 2... in input order,
// whatever the parallelism), so rng() gives per-element randomness that is
// reproducible under any parallelism or timing. Valid only during the call.
#ifndef SLUICE_PIPELINE_MAP_CONTEXT_H_
#define SLUICE_PIPELINE_MAP_CONTEXT_H_

#include <atomic>
#include <cstdint>

#include "sluice/core/rng.h"

namespace sluice {

struct MapContext {
  int64_t index = 0;  // position of the element in the stage's input
  uint64_t seed = 0;  // the stage's seed (from Options::seed, or random)
  const std::atomic<bool>* cancel_flag = nullptr;

  // A generator for this element alone: Rng(seed, index).
  Rng rng() const { return Rng(seed, static_cast<uint64_t>(index)); }
  // True once the iterator is being destroyed: a slow function may poll it
  // and return early (its result is discarded).
  bool cancelled() const {
    return cancel_flag != nullptr && cancel_flag->load(std::memory_order_relaxed);
  }
};

}  // namespace sluice

#endif  // SLUICE_PIPELINE_MAP_CONTEXT_H_
