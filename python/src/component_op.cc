// ComponentOp (component_op.h): one kernel, eager and as a map function.
#include "component_op.h"

#include <utility>

namespace sluice::python {

void RegisterComponentOp(nb::module_& m) {
  nb::class_<ComponentOp>(m, "ComponentOp",
                          "A tensor op with its parameters bound (sluice.image, sluice.io): "
                          "call it on a value, or make it a map function over one component.")
      .def_ro("name", &ComponentOp::name)
      .def_ro("random", &ComponentOp::random)
      .def(
          "__call__",
          [](const ComponentOp& op, nb::handle value, uint64_t seed, uint64_t stream) {
            Tensor input = Unwrap(TensorFromPython(value, op.name, op.input_dtype));
            Result<Tensor> out = [&] {
              nb::gil_scoped_release release;
              ComponentContext ctx(Rng(seed, stream));
              return op.fn(std::move(input), ctx);
            }();
            if (!out.ok()) {
              const Status& s = out.status();  // named once: the kernel may have named itself
              ThrowStatus(s.message().starts_with(op.name) ? s : s.WithContext(op.name));
            }
            return TensorToPython(*out);
          },
          nb::arg("value"), nb::arg("seed") = 0, nb::arg("stream") = 0,
          "The op on one value (the random stream Rng(seed, stream)), without the GIL.")
      .def(
          "map_function",
          [](const ComponentOp& op, nb::handle key, nb::handle output_key, bool keep_input,
             nb::handle seed, std::string name) {
            ComponentKey k;
            if (nb::isinstance<nb::str>(key)) {
              k = nb::cast<std::string>(key);
            } else if (nb::isinstance<nb::int_>(key) && !nb::isinstance<nb::bool_>(key)) {
              k = nb::cast<int64_t>(key);
            } else {
              throw nb::type_error((op.name +
                                    ": key must be a component name (str) or index (int), got " +
                                    nb::cast<std::string>(nb::repr(key)))
                                       .c_str());
            }
            ComponentMapOptions o{.keep_input = keep_input, .name = op.name};
            if (!output_key.is_none()) o.output = nb::cast<std::string>(output_key);
            if (keep_input && !o.output) {
              throw nb::value_error((op.name + ": keep_input=True needs an output_key").c_str());
            }
            if (!seed.is_none()) o.seed = nb::cast<uint64_t>(seed);
            return MakeMapFunction(MapComponent(std::move(k), op.fn, std::move(o)),
                                   name.empty() ? op.name : name);
          },
          nb::arg("key"), nb::arg("output_key").none(), nb::arg("keep_input"),
          nb::arg("seed").none(), nb::arg("name"));
}

}  // namespace sluice::python
