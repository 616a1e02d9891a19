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

#include "sluice/core/result.h"
#include "sluice/core/rng.h"
#include "sluice/core/tensor.h"

namespace sluice {
namespace pipeline_internal {
class RowPlacer;
}  // namespace pipeline_internal

struct MapContext {
  int64_t index = 0;  // position of the element in the stage's input
  uint64_t seed = 0;  // the stage's seed (from Options::seed, or random)
  const std::atomic<bool>* cancel_flag = nullptr;
  // The element's position before shard()/distribute split the data among
  // ranks (Element::key), or -1 when it was not split.
  int64_t key = -1;

  // A generator for this element alone: Rng(seed, key), or Rng(seed, index)
  // for data that was not split, so that every rank draws what one process
  // reading everything would.
  Rng rng() const { return Rng(seed, static_cast<uint64_t>(key >= 0 ? key : index)); }
  // True once the iterator is being destroyed: a slow function may poll it
  // and return early (its result is discarded).
  bool cancelled() const {
    return cancel_flag != nullptr && cancel_flag->load(std::memory_order_relaxed);
  }

  // A tensor to write output component `component` into (contents
  // unspecified, as Tensor::Allocate). When the map feeds batch(n)
  // (map-and-batch fusion) and the tensor is big enough to be placed, it is
  // this element's row of its batch's buffer, so returning it as that
  // component costs no copy at all; otherwise a new tensor. Either way the
  // results are the same. Use with the ops' *Into forms:
  //   SLUICE_ASSIGN_OR_RETURN(Tensor image, ctx.AllocateOutput(0, DType::kFloat32, shape));
  //   SLUICE_RETURN_IF_ERROR(ops::DecodeRandomCropResizeInto(jpeg, rng, options, &image));
  Result<Tensor> AllocateOutput(size_t component, DType dtype, const Shape& shape) const;

  // Set by the pipeline under map-and-batch fusion (AllocateOutput's rows).
  pipeline_internal::RowPlacer* placer = nullptr;
};

}  // namespace sluice

#endif  // SLUICE_PIPELINE_MAP_CONTEXT_H_
