// ComponentOp: one tensor kernel (an image op, read_file) with its
// parameters bound, usable two ways from Python: eagerly on one value
// (sluice.image.resize(img, ...)) and as a built-in map function over one
// component of an element (sluice.image.map.resize(..., key=...)), which
// Dataset.map runs without the GIL. Both forms call the same kernel, so they
// give the same result for the same input and random stream.
//
// The map form is pipeline/component_map.h's general MapComponent (key by
// name or index, output_key, keep_input, a per-op seed, the op's name in
// errors; ComponentContext::Allocate writes into the batch's row under
// map-and-batch fusion); the eager form gives the kernel a ComponentContext
// without a MapContext.
//
// Thread-safety: a ComponentOp is immutable; its kernel runs on several
// pipeline threads at once. Everything taking nanobind objects needs the GIL.
#ifndef SLUICE_PYTHON_SRC_COMPONENT_OP_H_
#define SLUICE_PYTHON_SRC_COMPONENT_OP_H_

#include "sluice_py.h"
// (sluice_py.h first: every file sees the same casters.)
#include <optional>
#include <string>

#include "sluice/pipeline/component_map.h"

namespace sluice::python {

struct ComponentOp {
  ComponentKernel fn;
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

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_COMPONENT_OP_H_
