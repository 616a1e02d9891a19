// Map functions over one component of an element: the glue between tensor
// kernels (ops/, the Python package's ops) and Dataset::map.
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
// several kernels chain on one element.
//
// The general form, MapComponent(key, ComponentKernel, ComponentMapOptions),
// picks the component by name or index (negative: from the end), moves it
// into the kernel unless it is kept (so a kernel may work in place), and
// gives the kernel a ComponentContext: the element's Rng (or Rng(seed, key
// or index) for an explicit per-kernel seed) and Allocate, which under
// map-and-batch fusion is the element's row of its batch
// (MapContext::AllocateOutput for the output component). The other forms
// are shorthands for it.
//
// An error names the component ("component 'image': ...", prefixed by the
// kernel's name if given); the stage adds the stage name and the element's
// origin. A missing name is NotFound listing the names there are; an index
// out of range is InvalidArgument.
//
// The returned MapFn owns a copy of the kernel; it is called from several
// threads at once when the map is parallel, so the kernel must be
// thread-safe (the ops kernels are). A ComponentContext is the kernel's own
// for one call.
#ifndef SLUICE_PIPELINE_COMPONENT_MAP_H_
#define SLUICE_PIPELINE_COMPONENT_MAP_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "sluice/core/rng.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/map_context.h"

namespace sluice {

using TensorFn = std::function<Result<Tensor>(const Tensor&)>;
using RandomTensorFn = std::function<Result<Tensor>(const Tensor&, Rng&)>;

// Replaces component `name` with fn(component).
MapFn MapComponent(std::string name, TensorFn fn);
MapFn MapComponent(std::string name, RandomTensorFn fn);
// Stores fn(component `input`) as component `output`.
MapFn MapComponent(std::string input, std::string output, TensorFn fn);
MapFn MapComponent(std::string input, std::string output, RandomTensorFn fn);

// What a ComponentKernel may use besides its input.
class ComponentContext {
 public:
  // Outside a pipeline (a kernel called on one value): Allocate is
  // Tensor::Allocate.
  explicit ComponentContext(Rng rng) : rng_(rng) {}
  // In a map stage, writing output component `output_component`.
  ComponentContext(Rng rng, const MapContext& map, size_t output_component)
      : rng_(rng), map_(&map), output_component_(output_component) {}

  Rng& rng() { return rng_; }
  // A tensor for the kernel's result (contents unspecified): under
  // map-and-batch fusion the element's row of its batch, else a new one.
  Result<Tensor> Allocate(DType dtype, const Shape& shape) const;

 private:
  Rng rng_;
  const MapContext* map_ = nullptr;
  size_t output_component_ = 0;
};

// The kernel: the input tensor (moved in unless the input is kept) to the
// result.
using ComponentKernel = std::function<Result<Tensor>(Tensor input, ComponentContext& ctx)>;

// A component's name, or its index (negative: counted from the end).
using ComponentKey = std::variant<int64_t, std::string>;

struct ComponentMapOptions {
  // The result's name. Without keep_input the result takes the input's
  // place under this name, unless it names another component: then it
  // replaces that one and the input goes. Unset: the input's name.
  std::optional<std::string> output;
  // Keep the input; the result replaces the component named `output` (the
  // input itself included), else is appended.
  bool keep_input = false;
  // The kernel's Rng is Rng(seed, key or index) (MapContext::rng() with this
  // seed) instead of the stage's.
  std::optional<uint64_t> seed;
  // The kernel's name, prefixed to errors ("resize of component 'image': ").
  std::string name;
};

MapFn MapComponent(ComponentKey key, ComponentKernel fn, ComponentMapOptions options = {});

}  // namespace sluice

#endif  // SLUICE_PIPELINE_COMPONENT_MAP_H_
