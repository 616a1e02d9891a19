// The bindings of the small stages (Dataset.scan, take_while, unique,
// rebatch, rejection_resample, Dataset.random, Dataset.counter);
// python/sluice/dataset.py is the Python half. Python callables are held as
// PyRef and called with the GIL taken only around the call.
#include "sluice_py.h"

namespace sluice::python {
namespace {

// The C++ Dataset inside a sluice.Dataset or a _sluice.Dataset.
const Dataset& Of(nb::handle py) {
  nb::handle h = nb::hasattr(py, "_ds") ? py.attr("_ds") : py;
  return nb::cast<const Dataset&>(h);
}

// A Python value that must be one scalar of NumPy kind `kinds` ("b", "iu").
nb::object OneScalar(nb::handle out, const char* kinds, const std::string& what,
                     const char* expected) {
  nb::object a = nb::module_::import_("numpy").attr("asarray")(out);
  const std::string kind = nb::cast<std::string>(a.attr("dtype").attr("kind"));
  if (std::string_view(kinds).find(kind) == std::string_view::npos ||
      nb::cast<int64_t>(a.attr("size")) != 1) {
    throw nb::type_error(
        (what + ": must return " + expected + ", got " + nb::cast<std::string>(nb::repr(out)))
            .c_str());
  }
  return a.attr("item")();
}

PredicateFn PythonPredicate(nb::handle fn, std::string what) {
  PyRef f(fn);
  return [f, what](const Element& e) -> Result<bool> {
    return UnderGil<bool>(what, [&]() -> Result<bool> {
      nb::object out = CallOnElement(f.get(), e);
      if (nb::isinstance<nb::bool_>(out)) return nb::cast<bool>(out);
      return nb::cast<bool>(OneScalar(out, "b", what, "a bool scalar"));
    });
  };
}

}  // namespace

void RegisterSmallStages(nb::module_& m) {
  m.def(
      "_scan",
      [](nb::handle ds, nb::handle initial, nb::handle fn, std::string name) {
        Element init = Unwrap(ElementFromPython(initial, "scan initial_state"));
        const std::string what = name.empty() ? "scan" : name;
        PyRef f(fn);
        ScanFn scan = [f, what](Element state, Element e) -> Result<std::pair<Element, Element>> {
          return UnderGil<std::pair<Element, Element>>(
              what, [&]() -> Result<std::pair<Element, Element>> {
                nb::object out = f.get()(ElementToPython(state), ElementToPython(e));
                if (!nb::isinstance<nb::tuple>(out) || nb::len(out) != 2) {
                  return Status::InvalidArgument(
                      what + ": scan_func must return (new_state, output_element), got " +
                      nb::cast<std::string>(nb::repr(out)));
                }
                SLUICE_ASSIGN_OR_RETURN(Element s, ElementFromPython(out[0], what + " state"));
                SLUICE_ASSIGN_OR_RETURN(Element o, ElementFromPython(out[1], what));
                return std::pair(std::move(s), std::move(o));
              });
        };
        return Checked(Of(ds).scan(std::move(init), std::move(scan), ScanOptions{.name = name}));
      },
      nb::arg("ds"), nb::arg("initial_state"), nb::arg("fn"), nb::arg("name"));
  m.def("_take_while", [](nb::handle ds, nb::handle fn, std::string name) {
    return Checked(Of(ds).take_while(PythonPredicate(fn, name.empty() ? "take_while" : name),
                                     TakeWhileOptions{.name = name}));
  });
  m.def("_unique", [](nb::handle ds) { return Checked(Of(ds).unique()); });
  m.def("_rebatch",
        [](nb::handle ds, std::vector<int64_t> sizes, bool drop_remainder, std::string name) {
          return Checked(Of(ds).rebatch(
              std::move(sizes), RebatchOptions{.drop_remainder = drop_remainder, .name = name}));
        });
  m.def(
      "_random",
      [](std::optional<uint64_t> seed, bool rerandomize, std::string name) {
        return Checked(Dataset::random(
            RandomOptions{.seed = seed, .rerandomize_each_iteration = rerandomize, .name = name}));
      },
      nb::arg("seed").none(), nb::arg("rerandomize"), nb::arg("name"));
  m.def("_counter", [](int64_t start, int64_t step, std::string dtype) {
    return Checked(Dataset::counter(start, step, Unwrap(DTypeFromName(dtype))));
  });
  m.def(
      "_rejection_resample",
      [](nb::handle ds, nb::handle class_fn, std::vector<double> target,
         std::optional<std::vector<double>> initial, std::optional<uint64_t> seed,
         std::string name) {
        const std::string what = name.empty() ? "rejection_resample" : name;
        PyRef f(class_fn);
        ClassFn fn = [f, what](const Element& e) -> Result<int64_t> {
          return UnderGil<int64_t>(what, [&]() -> Result<int64_t> {
            nb::object out = CallOnElement(f.get(), e);
            return nb::cast<int64_t>(OneScalar(out, "biu", what + " class_func", "an int scalar"));
          });
        };
        RejectionResampleOptions o{.seed = seed, .name = name};
        if (initial) o.initial_dist = std::move(*initial);
        return Checked(Of(ds).rejection_resample(std::move(fn), std::move(target), std::move(o)));
      },
      nb::arg("ds"), nb::arg("class_fn"), nb::arg("target_dist"), nb::arg("initial_dist").none(),
      nb::arg("seed").none(), nb::arg("name"));
}

}  // namespace sluice::python
