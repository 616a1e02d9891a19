// Windows and groups for Python (sluice.Dataset.window, group_by_window,
// bucket_by_sequence_length, sluice.experimental.group_by_reducer): module
// functions taking the _sluice.Dataset first, wrapped by
// python/sluice/dataset.py. Python callables take the GIL only around their
// own call. `wrap` is the Python class sluice.Dataset: datasets handed to
// Python functions (a window, a group) are wrapped in it.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/grouping.h"
#include "sluice_py.h"

namespace sluice::python {
namespace {

// An integer scalar (int, NumPy integer, 0-d integer array) as int64.
Result<int64_t> Int64Of(nb::handle value, const std::string& what) {
  PyObject* i = PyNumber_Index(value.ptr());
  if (i == nullptr) {
    PyErr_Clear();
    return Status::InvalidArgument(what + " must return an integer scalar, got " + TypeName(value));
  }
  const long long v = PyLong_AsLongLong(i);
  Py_DECREF(i);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return static_cast<int64_t>(v);
}

nb::object Int64ToPython(int64_t v) { return nb::module_::import_("numpy").attr("int64")(v); }

KeyFn PythonKeyFn(nb::handle fn, std::string what) {
  PyRef f(fn);
  return [f, what](const Element& e) -> Result<int64_t> {
    return UnderGil<int64_t>(what, [&]() -> Result<int64_t> {
      return Int64Of(CallSpread(f.get(), ElementToPython(e)), what);
    });
  };
}

// A window as tf.data hands it to functions: a dataset per component, in
// the element's structure (a dict, one dataset, or a tuple: separate args).
DatasetFn WindowDatasetFn(nb::handle fn, nb::handle wrap, std::string what) {
  PyRef f(fn), w(wrap);
  return [f, w, what](const Element& window) -> Result<Dataset> {
    return UnderGil<Dataset>(what, [&]() -> Result<Dataset> {
      std::vector<nb::object> parts;
      for (const Tensor& t : window.components()) {
        Dataset ds = Dataset::from_window(Element({t}));
        SLUICE_RETURN_IF_ERROR(ds.status());
        parts.push_back(w.get()(nb::cast(std::move(ds), nb::rv_policy::move)));
      }
      const auto& names = window.names();
      const bool all_named =
          !names.empty() &&
          std::all_of(names.begin(), names.end(), [](const auto& n) { return !n.empty(); });
      nb::object out;
      if (all_named) {
        nb::dict d;
        for (size_t i = 0; i < parts.size(); ++i) d[names[i].c_str()] = parts[i];
        out = f.get()(d);
      } else if (parts.size() == 1) {
        out = f.get()(parts[0]);
      } else {
        nb::list l;
        for (auto& p : parts) l.append(p);
        out = CallSpread(f.get(), nb::tuple(l));
      }
      return DatasetOf(out, what);
    });
  };
}

std::vector<Tensor> PaddingValues(const Dataset& ds, nb::handle values) {
  std::vector<Tensor> out;
  if (values.is_none()) return out;
  const ElementSpec& spec = ds.element_spec();
  size_t i = 0;
  for (nb::handle v : values) {
    std::optional<DType> want;
    if (spec.known() && i < spec.size()) want = spec.components()[i].dtype;
    out.push_back(Unwrap(TensorFromPython(v, "padding_values", want)));
    ++i;
  }
  return out;
}

std::vector<Shape> PaddedShapes(nb::handle shapes) {
  std::vector<Shape> out;
  if (shapes.is_none()) return out;
  for (nb::handle s : shapes) {
    out.push_back(s.is_none() ? Shape::UnknownRank() : Shape(nb::cast<std::vector<int64_t>>(s)));
  }
  return out;
}

}  // namespace

void RegisterWindow(nb::module_& m) {
  m.def(
      "window",
      [](const Dataset& ds, int64_t size, std::optional<int64_t> shift, int64_t stride,
         bool drop_remainder, std::string name) {
        return Checked(ds.window(size, {.shift = shift,
                                        .stride = stride,
                                        .drop_remainder = drop_remainder,
                                        .name = std::move(name)}));
      },
      nb::arg("ds"), nb::arg("size"), nb::arg("shift").none(), nb::arg("stride"),
      nb::arg("drop_remainder"), nb::arg("name"));
  m.def("elements_are_windows", [](const Dataset& ds) { return ElementsAreWindows(ds); });
  m.def("flat_map_windows", [](const Dataset& ds, nb::handle fn, nb::handle wrap) {
    return Checked(ds.flat_map(WindowDatasetFn(fn, wrap, "flat_map")));
  });
  m.def(
      "interleave_windows",
      [](const Dataset& ds, nb::handle fn, nb::handle wrap, int64_t cycle_length,
         int64_t block_length, int64_t parallelism, std::optional<bool> deterministic,
         std::string name) {
        return Checked(ds.interleave(WindowDatasetFn(fn, wrap, name.empty() ? "interleave" : name),
                                     InterleaveOptions{.cycle_length = cycle_length,
                                                       .block_length = block_length,
                                                       .parallelism = parallelism,
                                                       .deterministic = deterministic,
                                                       .name = name}));
      },
      nb::arg("ds"), nb::arg("fn"), nb::arg("wrap"), nb::arg("cycle_length"),
      nb::arg("block_length"), nb::arg("parallelism"), nb::arg("deterministic").none(),
      nb::arg("name"));
  m.def(
      "group_by_window",
      [](const Dataset& ds, nb::handle key_fn, nb::handle reduce_fn, nb::handle wrap,
         std::optional<int64_t> window_size, nb::handle window_size_fn, std::string name) {
        const std::string what = name.empty() ? "group_by_window" : name;
        PyRef r(reduce_fn), w(wrap);
        WindowReduceFn reduce = [r, w, what](int64_t key,
                                             const Dataset& window) -> Result<Dataset> {
          return UnderGil<Dataset>(what, [&]() -> Result<Dataset> {
            nb::object out = r.get()(Int64ToPython(key),
                                     w.get()(nb::cast(Dataset(window), nb::rv_policy::move)));
            return DatasetOf(out, what + " reduce_func");
          });
        };
        GroupByWindowOptions o{.name = name};
        if (window_size) {
          return Checked(
              ds.group_by_window(PythonKeyFn(key_fn, what), std::move(reduce), *window_size, o));
        }
        PyRef s(window_size_fn);
        WindowSizeFn size = [s, what](int64_t key) -> Result<int64_t> {
          return UnderGil<int64_t>(what, [&]() -> Result<int64_t> {
            return Int64Of(s.get()(Int64ToPython(key)), what + " window_size_func");
          });
        };
        return Checked(
            ds.group_by_window(PythonKeyFn(key_fn, what), std::move(reduce), std::move(size), o));
      },
      nb::arg("ds"), nb::arg("key_fn"), nb::arg("reduce_fn"), nb::arg("wrap"),
      nb::arg("window_size").none(), nb::arg("window_size_fn").none(), nb::arg("name"));
  m.def("group_by_reducer", [](const Dataset& ds, nb::handle key_fn, nb::handle init,
                               nb::handle reduce, nb::handle finalize) {
    const std::string what = "group_by_reducer";
    PyRef i(init), r(reduce), f(finalize);
    Reducer reducer{.init = [i, what](int64_t key) -> Result<Element> {
                      return UnderGil<Element>(what, [&]() -> Result<Element> {
                        return ElementFromPython(i.get()(Int64ToPython(key)), what + " init_func");
                      });
                    },
                    .reduce = [r, what](Element state, Element e) -> Result<Element> {
                      return UnderGil<Element>(what, [&]() -> Result<Element> {
                        nb::object out = r.get()(ElementToPython(state), ElementToPython(e));
                        return ElementFromPython(out, what + " reduce_func");
                      });
                    },
                    .finalize = [f, what](Element state) -> Result<Element> {
                      return UnderGil<Element>(what, [&]() -> Result<Element> {
                        return ElementFromPython(CallSpread(f.get(), ElementToPython(state)),
                                                 what + " finalize_func");
                      });
                    }};
    return Checked(ds.apply(group_by_reducer(PythonKeyFn(key_fn, what), std::move(reducer))));
  });
  m.def(
      "bucket_by_sequence_length",
      [](const Dataset& ds, nb::handle length_fn, std::vector<int64_t> boundaries,
         std::vector<int64_t> sizes, nb::handle padded_shapes, nb::handle padding_values,
         bool pad_to_bucket_boundary, bool no_padding, bool drop_remainder, std::string name) {
        BucketBySequenceLengthOptions o{.padded_shapes = PaddedShapes(padded_shapes),
                                        .padding_values = PaddingValues(ds, padding_values),
                                        .pad_to_bucket_boundary = pad_to_bucket_boundary,
                                        .no_padding = no_padding,
                                        .drop_remainder = drop_remainder,
                                        .name = name};
        return Checked(ds.bucket_by_sequence_length(
            PythonKeyFn(length_fn, "bucket_by_sequence_length element_length_func"),
            std::move(boundaries), std::move(sizes), std::move(o)));
      },
      nb::arg("ds"), nb::arg("length_fn"), nb::arg("boundaries"), nb::arg("sizes"),
      nb::arg("padded_shapes").none(), nb::arg("padding_values").none(),
      nb::arg("pad_to_bucket_boundary"), nb::arg("no_padding"), nb::arg("drop_remainder"),
      nb::arg("name"));
}

}  // namespace sluice::python
