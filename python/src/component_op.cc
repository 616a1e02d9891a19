// ComponentOp (component_op.h): one kernel, eager and as a map function.
#include "component_op.h"

#include <memory>
#include <utility>
#include <vector>

namespace sluice::python {

Result<Tensor> OpContext::Allocate(DType dtype, const Shape& shape) const {
  if (map_ != nullptr) return map_->AllocateOutput(output_index_, dtype, shape);
  return Tensor::Allocate(dtype, shape);
}

namespace {

// The map function's parameters, shared by its copies.
struct ComponentMap {
  ComponentOp op;
  std::variant<int64_t, std::string> key;
  std::optional<std::string> output_key;
  bool keep_input = false;
  std::optional<uint64_t> seed;

  std::string KeyLabel() const {
    if (const auto* name = std::get_if<std::string>(&key)) return "component '" + *name + "'";
    return "component " + std::to_string(std::get<int64_t>(key));
  }

  // The index of the input component, or NotFound / InvalidArgument.
  Result<size_t> InputIndex(const Element& e) const {
    if (const auto* name = std::get_if<std::string>(&key)) {
      const int i = e.index_of(*name);
      if (i < 0) {
        Result<Tensor> missing = e.get(*name);  // NotFound listing the names
        return Status(missing.status().code(),
                      op.name + ": " + std::string(missing.status().message()));
      }
      return static_cast<size_t>(i);
    }
    const int64_t n = static_cast<int64_t>(e.size());
    int64_t i = std::get<int64_t>(key);
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
      return Status::InvalidArgument(op.name + ": " + KeyLabel() + " of an element of " +
                                     std::to_string(n) + " component" + (n == 1 ? "" : "s"));
    }
    return static_cast<size_t>(i);
  }

  Result<Element> Apply(Element e, const MapContext& c) const {
    SLUICE_ASSIGN_OR_RETURN(const size_t i, InputIndex(e));
    // (names is read only before anything changes e's names.)
    const std::vector<std::string>& names = e.names();
    const std::string input_name = names[i];
    // Where the result goes: `other` is an existing component it replaces
    // (besides the input's place), -1 if none.
    int other = output_key ? e.index_of(*output_key) : -1;
    if (other == static_cast<int>(i)) other = -1;
    size_t out_index = i;
    if (keep_input) {
      out_index = other >= 0 ? static_cast<size_t>(other) : e.size();
    } else if (other >= 0) {
      out_index = static_cast<size_t>(other) - (i < static_cast<size_t>(other) ? 1 : 0);
    }
    MapContext seeded = c;
    if (seed) seeded.seed = *seed;
    OpContext ctx(seeded.rng(), &c, out_index);
    Tensor input;
    if (keep_input) {
      input = e[i];
    } else {
      input = std::move(e[i]);  // nothing else needs it: ops may work in place
    }
    Result<Tensor> r = op.fn(std::move(input), ctx);
    if (!r.ok()) {
      const std::string label =
          input_name.empty() ? "component " + std::to_string(i) : "component '" + input_name + "'";
      return Status(r.status().code(),
                    op.name + " of " + label + ": " + std::string(r.status().message()));
    }
    Tensor result = std::move(r).value();
    const std::string& out_name = output_key ? *output_key : input_name;
    if (keep_input) {
      if (other >= 0) {
        e[static_cast<size_t>(other)] = std::move(result);
      } else {
        e.push_back(std::move(result), out_name);
      }
      return e;
    }
    if (other < 0 && out_name == input_name) {  // in place, names unchanged
      e[i] = std::move(result);
      return e;
    }
    // Renamed, or replacing another component: a new list of names.
    std::vector<Tensor> tensors;
    std::vector<std::string> new_names;
    tensors.reserve(e.size());
    new_names.reserve(e.size());
    for (size_t j = 0; j < e.size(); ++j) {
      if (other >= 0 && j == i) continue;  // the input goes
      if (j == (other >= 0 ? static_cast<size_t>(other) : i)) {
        tensors.push_back(std::move(result));
        new_names.push_back(out_name);
      } else {
        tensors.push_back(std::move(e[j]));
        new_names.push_back(names[j]);
      }
    }
    Element out(std::move(tensors), std::move(new_names));
    out.set_origin(e.origin_source(), e.origin_index());
    out.set_key(e.key());
    return out;
  }
};

}  // namespace

MapFn ComponentMapFn(ComponentOp op, std::variant<int64_t, std::string> key,
                     std::optional<std::string> output_key, bool keep_input,
                     std::optional<uint64_t> seed) {
  auto m = std::make_shared<const ComponentMap>(
      ComponentMap{std::move(op), std::move(key), std::move(output_key), keep_input, seed});
  return [m](Element e, const MapContext& c) { return m->Apply(std::move(e), c); };
}

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
              OpContext ctx(Rng(seed, stream), nullptr, 0);
              return op.fn(std::move(input), ctx);
            }();
            if (!out.ok()) {
              const std::string_view msg = out.status().message();
              if (msg.substr(0, op.name.size()) == op.name) ThrowStatus(out.status());
              ThrowStatus(Status(out.status().code(), op.name + ": " + std::string(msg)));
            }
            return TensorToPython(*out);
          },
          nb::arg("value"), nb::arg("seed") = 0, nb::arg("stream") = 0,
          "The op on one value (the random stream Rng(seed, stream)), without the GIL.")
      .def(
          "map_function",
          [](const ComponentOp& op, nb::handle key, nb::handle output_key, bool keep_input,
             nb::handle seed, std::string name) {
            std::variant<int64_t, std::string> k;
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
            std::optional<std::string> out;
            if (!output_key.is_none()) out = nb::cast<std::string>(output_key);
            if (keep_input && !out) {
              throw nb::value_error((op.name + ": keep_input=True needs an output_key").c_str());
            }
            std::optional<uint64_t> s;
            if (!seed.is_none()) s = nb::cast<uint64_t>(seed);
            return MakeMapFunction(ComponentMapFn(op, std::move(k), std::move(out), keep_input, s),
                                   name.empty() ? op.name : name);
          },
          nb::arg("key"), nb::arg("output_key").none(), nb::arg("keep_input"),
          nb::arg("seed").none(), nb::arg("name"));
}

}  // namespace sluice::python
