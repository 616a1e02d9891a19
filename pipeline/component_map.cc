#include "sluice/pipeline/component_map.h"

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace sluice {

Result<Tensor> ComponentContext::Allocate(DType dtype, const Shape& shape) const {
  if (map_ != nullptr) return map_->AllocateOutput(output_component_, dtype, shape);
  return Tensor::Allocate(dtype, shape);
}

namespace {

// One MapComponent's parameters, shared by the MapFn's copies.
struct ComponentMap {
  ComponentKey key;
  ComponentKernel fn;
  ComponentMapOptions options;

  std::string Prefix(const std::string& sep) const {
    return options.name.empty() ? "" : options.name + sep;
  }

  // The index of the input component, or NotFound / InvalidArgument.
  Result<size_t> InputIndex(const Element& e) const {
    if (const auto* name = std::get_if<std::string>(&key)) {
      const int i = e.index_of(*name);
      if (i >= 0) return static_cast<size_t>(i);
      const Status missing = e.get(*name).status();  // NotFound listing the names
      return Status(missing.code(), Prefix(": ") + std::string(missing.message()));
    }
    const int64_t n = static_cast<int64_t>(e.size());
    const int64_t k = std::get<int64_t>(key);
    const int64_t i = k < 0 ? k + n : k;
    if (i < 0 || i >= n) {
      return Status::InvalidArgument(Prefix(": ") + "component " + std::to_string(k) +
                                     " of an element of " + std::to_string(n) + " component" +
                                     (n == 1 ? "" : "s"));
    }
    return static_cast<size_t>(i);
  }

  Result<Element> Apply(Element e, const MapContext& c) const {
    SLUICE_ASSIGN_OR_RETURN(const size_t i, InputIndex(e));
    const std::string input_name = e.names()[i];
    // Where the result goes in `e` (e.size(): appended), and its index in
    // the element returned (without keep_input the input goes).
    const int found = options.output ? e.index_of(*options.output) : -1;
    size_t at = i;
    if (found >= 0) {
      at = static_cast<size_t>(found);
    } else if (options.keep_input && options.output) {
      at = e.size();
    }
    const size_t out = !options.keep_input && at > i ? at - 1 : at;
    MapContext seeded = c;
    if (options.seed) seeded.seed = *options.seed;
    ComponentContext ctx(seeded.rng(), c, out);
    // A kept input is shared; otherwise moved in, so the kernel may reuse it.
    Result<Tensor> r = options.keep_input ? fn(e[i], ctx) : fn(std::move(e[i]), ctx);
    if (!r.ok()) {
      const std::string label =
          input_name.empty() ? "component " + std::to_string(i) : "component '" + input_name + "'";
      return Status(r.status().code(),
                    Prefix(" of ") + label + ": " + std::string(r.status().message()));
    }
    const std::string& out_name = options.output ? *options.output : input_name;
    if (options.keep_input) {
      if (at < e.size()) {
        e[at] = std::move(r).value();
      } else {
        e.push_back(std::move(r).value(), out_name);
      }
      return e;
    }
    if (at == i && out_name == input_name) {  // in place, names unchanged
      e[i] = std::move(r).value();
      return e;
    }
    // Renamed, or replacing another component: a new list of names.
    std::vector<std::string> names = e.names();
    std::vector<Tensor> tensors = std::move(e.components());
    tensors[at] = std::move(r).value();
    names[at] = out_name;
    if (at != i) {
      tensors.erase(tensors.begin() + static_cast<std::ptrdiff_t>(i));
      names.erase(names.begin() + static_cast<std::ptrdiff_t>(i));
    }
    Element result(std::move(tensors), std::move(names));
    result.set_origin(e.origin_source(), e.origin_index());
    result.set_key(e.key());
    return result;
  }
};

ComponentKernel Kernel(RandomTensorFn fn) {
  return [fn = std::move(fn)](Tensor t, ComponentContext& ctx) { return fn(t, ctx.rng()); };
}

ComponentKernel Kernel(TensorFn fn) {
  return [fn = std::move(fn)](Tensor t, ComponentContext&) { return fn(t); };
}

}  // namespace

MapFn MapComponent(ComponentKey key, ComponentKernel fn, ComponentMapOptions options) {
  auto m = std::make_shared<const ComponentMap>(
      ComponentMap{std::move(key), std::move(fn), std::move(options)});
  return [m](Element e, const MapContext& c) { return m->Apply(std::move(e), c); };
}

MapFn MapComponent(std::string input, std::string output, RandomTensorFn fn) {
  return MapComponent(std::move(input), Kernel(std::move(fn)),
                      {.output = std::move(output), .keep_input = true});
}

MapFn MapComponent(std::string input, std::string output, TensorFn fn) {
  return MapComponent(std::move(input), Kernel(std::move(fn)),
                      {.output = std::move(output), .keep_input = true});
}

MapFn MapComponent(std::string name, TensorFn fn) {
  return MapComponent(std::move(name), Kernel(std::move(fn)));
}

MapFn MapComponent(std::string name, RandomTensorFn fn) {
  return MapComponent(std::move(name), Kernel(std::move(fn)));
}

}  // namespace sluice
