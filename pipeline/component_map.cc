#include "sluice/pipeline/component_map.h"

#include <utility>

namespace sluice {
namespace {

Result<Element> Apply(Element e, const std::string& input, const std::string& output,
                      const RandomTensorFn& fn, const MapContext& c) {
  const int i = e.index_of(input);
  if (i < 0) return e.get(input).status();  // NotFound listing the names
  Rng rng = c.rng();
  Result<Tensor> r = fn(e[static_cast<size_t>(i)], rng);
  if (!r.ok()) {
    return Status(r.status().code(),
                  "component '" + input + "': " + std::string(r.status().message()));
  }
  if (Tensor* slot = e.find(output)) {
    *slot = std::move(r).value();
  } else {
    e.push_back(std::move(r).value(), output);
  }
  return e;
}

}  // namespace

MapFn MapComponent(std::string input, std::string output, RandomTensorFn fn) {
  return [input = std::move(input), output = std::move(output), fn = std::move(fn)](
             Element e, const MapContext& c) { return Apply(std::move(e), input, output, fn, c); };
}

MapFn MapComponent(std::string input, std::string output, TensorFn fn) {
  return MapComponent(
      std::move(input), std::move(output),
      RandomTensorFn([fn = std::move(fn)](const Tensor& t, Rng&) { return fn(t); }));
}

MapFn MapComponent(std::string name, TensorFn fn) {
  std::string output = name;
  return MapComponent(std::move(name), std::move(output), std::move(fn));
}

MapFn MapComponent(std::string name, RandomTensorFn fn) {
  std::string output = name;
  return MapComponent(std::move(name), std::move(output), std::move(fn));
}

}  // namespace sluice
