// Map functions over one component of an element: the glue between tensor
// kernels (ops/) and Dataset::map.
//
//   ds.map(sluice::MapComponent("image/encoded", "image", [](const Tensor& t) {
//          return ops::DecodeJpeg(t.scalar<std::string_view>());
//        }))
//     .map(sluice::MapComponent("image", [](const Tensor& t, Rng& rng) {
//          return ops::RandomFlipLeftRight(t, rng);
//        }), {.parallelism = sluice::kAutotune});
//
// The kernel gets the component's tensor (and, in the second form, the
// element's own Rng: MapContext::rng(), so random augmentation is the same
// under any parallelism). Its result replaces the component, or is stored
// under `output` (replacing a component of that name, else appended), so
// several kernels chain on one element. An error names the component; the
// stage adds the stage name and the element's origin (file, record). A
// missing component is NotFound listing the names there are.
//
// The returned MapFn copies the kernel; it is called from several threads at
// once when the map is parallel, so the kernel must be thread-safe (the ops
// kernels are).
#ifndef SLUICE_PIPELINE_COMPONENT_MAP_H_
#define SLUICE_PIPELINE_COMPONENT_MAP_H_

#include <functional>
#include <string>

#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"

namespace sluice {

using TensorFn = std::function<Result<Tensor>(const Tensor&)>;
using RandomTensorFn = std::function<Result<Tensor>(const Tensor&, Rng&)>;

// Replaces component `name` with fn(component).
MapFn MapComponent(std::string name, TensorFn fn);
MapFn MapComponent(std::string name, RandomTensorFn fn);
// Stores fn(component `input`) as component `output`.
MapFn MapComponent(std::string input, std::string output, TensorFn fn);
MapFn MapComponent(std::string input, std::string output, RandomTensorFn fn);

}  // namespace sluice

#endif  // SLUICE_PIPELINE_COMPONENT_MAP_H_
