// ComponentOp: one tensor kernel (an image op, read_file) with its
// parameters bound, usable two ways from Python: eagerly on one value
// (sluice.image.resize(img, ...)) and as a built-in map function over one
// component of an element (sluice.image.map.resize(..., key=...)), which
// Dataset.map runs without the GIL. Both forms call the same OpFn, so they
// give the same result for the same input and random stream.
//
// The map form is pipeline/component_map.h's MapComponent grown by what the
// Python API needs: the component is picked by name or index, the result
// takes the input's place (renamed to output_key) unless keep_input, an op
// may write its result straight into the element's row of the batch
// (OpContext::Allocate -> MapContext::AllocateOutput, map-and-batch fusion)
// and a random op may be given its own seed.
//
// Thread-safety: a ComponentOp is immutable; its OpFn runs on several
// pipeline threads at once. Everything taking nanobind objects needs the GIL.
#ifndef SLUICE_PYTHON_SRC_COMPONENT_OP_H_
#define SLUICE_PYTHON_SRC_COMPONENT_OP_H_

#include "sluice_py.h"
// (sluice_py.h first: every file sees the same casters.)
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "sluice/core/rng.h"
#include "sluice/pipeline/map_context.h"

namespace sluice::python {

// What an OpFn may use besides its input: the element's random stream, and
// where to put its output.
class OpContext {
 public:
  OpContext(Rng rng, const MapContext* map, size_t output_index)
      : rng_(rng), map_(map), output_index_(output_index) {}
  Rng& rng() { return rng_; }
  // A tensor for the op's result: under map-and-batch fusion the element's
  // row of its batch (MapContext::AllocateOutput), else a new tensor.
  Result<Tensor> Allocate(DType dtype, const Shape& shape) const;

 private:
  Rng rng_;
  const MapContext* map_;  // null: eager
  size_t output_index_;
};

// The kernel: the input tensor (moved in where nothing else needs it, so
// ops may work in place) to the result.
using OpFn = std::function<Result<Tensor>(Tensor input, OpContext& ctx)>;

struct ComponentOp {
  OpFn fn;
  std::string name;                  // the op's Python name ("resize")
  std::optional<DType> input_dtype;  // eager input converted to it (kString: bytes)
  bool random = false;               // draws from the rng (takes a seed)
};

// Registers the Python class _sluice.ComponentOp:
//   op(value, seed=0, stream=0)     eager: the result for one value, drawn
//                                   from Rng(seed, stream), without the GIL
//   op.map_function(key, output_key, keep_input, seed, name)
//                                   the sluice.MapFunction
void RegisterComponentOp(nb::module_& m);

// The map function of `op` over component `key` (a name or an index).
MapFn ComponentMapFn(ComponentOp op, std::variant<int64_t, std::string> key,
                     std::optional<std::string> output_key, bool keep_input,
                     std::optional<uint64_t> seed);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_COMPONENT_OP_H_
