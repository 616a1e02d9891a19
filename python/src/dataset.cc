// _sluice.Dataset and _sluice.Iterator: the C++ pipeline for the Python
// package (python/sluice/dataset.py wraps them with tf.data's names).
//
// The GIL: every call that runs the pipeline (next, save, restore, making
// or dropping an iterator, reduce) releases it, so built-in stages never
// hold it; Python callables (map, filter, flat_map, interleave, generators,
// reduce) take it only around their own call.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/options.h"
#include "sluice/records/compression.h"
#include "sluice_py.h"

namespace sluice::python {
namespace {

// An optional argument: None is nullopt.
template <typename T>
std::optional<T> Opt(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return nb::cast<T>(h);
}

MapFn PythonMapFn(nb::handle fn, std::string what) {
  PyRef f(fn);
  return [f, what](Element e, const MapContext&) -> Result<Element> {
    return UnderGil<Element>(what, [&]() -> Result<Element> {
      nb::object out = CallOnElement(f.get(), e);
      return ElementFromPython(out, what);
    });
  };
}

DatasetFn PythonDatasetFn(nb::handle fn, std::string what) {
  PyRef f(fn);
  return [f, what](const Element& e) -> Result<Dataset> {
    return UnderGil<Dataset>(what, [&]() -> Result<Dataset> {
      nb::object out = CallOnElement(f.get(), e);
      return DatasetOf(out, what);
    });
  };
}

// A spec from the Python side's [(name, dtype, shape or None), ...].
using SpecList =
    std::vector<std::tuple<std::string, std::string, std::optional<std::vector<int64_t>>>>;
ElementSpec SpecFromList(const std::optional<SpecList>& list) {
  if (!list) return ElementSpec::Unknown();
  std::vector<ComponentSpec> components;
  for (const auto& [name, dtype, shape] : *list) {
    components.push_back(
        {name, Unwrap(DTypeFromName(dtype)), shape ? Shape(*shape) : Shape::UnknownRank()});
  }
  return ElementSpec(std::move(components));
}

nb::object SpecToList(const ElementSpec& spec) {
  if (!spec.known()) return nb::none();
  nb::list out;
  for (const ComponentSpec& c : spec.components()) {
    nb::object shape = nb::none();
    if (!c.shape.unknown_rank()) {
      nb::list dims;
      for (int64_t d : c.shape.dims()) dims.append(d < 0 ? nb::none() : nb::cast(d));
      shape = nb::tuple(dims);
    }
    out.append(nb::make_tuple(c.name, std::string(DTypeName(c.dtype)), shape));
  }
  return out;
}

// A Python generator function as a sluice generator: `make` calls it once
// per iterator, each call of the result calls next() on what it returned.
std::function<GeneratorFn()> PythonGenerator(nb::handle fn, ElementSpec spec) {
  PyRef f(fn);
  auto shared_spec = std::make_shared<const ElementSpec>(std::move(spec));
  // A named signature: a dict's components are put in its order.
  auto names = std::make_shared<std::vector<std::string>>();
  if (shared_spec->known()) {
    for (const ComponentSpec& c : shared_spec->components()) names->push_back(c.name);
    if (std::all_of(names->begin(), names->end(), [](const auto& n) { return n.empty(); })) {
      names->clear();
    }
  }
  return [f, shared_spec, names]() -> GeneratorFn {
    auto iter = std::make_shared<PyRef>();
    return [f, shared_spec, names, iter]() -> Result<std::optional<Element>> {
      const std::string what = "from_generator";
      return UnderGil<std::optional<Element>>(what, [&]() -> Result<std::optional<Element>> {
        if (!*iter) *iter = PyRef(nb::iter(f.get()()));
        PyObject* item = PyIter_Next(iter->get().ptr());
        if (item == nullptr) {
          if (PyErr_Occurred()) throw nb::python_error();
          return std::optional<Element>();
        }
        nb::object value = nb::steal(item);
        SLUICE_ASSIGN_OR_RETURN(Element e, ElementFromPython(value, what, shared_spec.get()));
        if (!names->empty() && e.names() != *names) {
          std::vector<Tensor> ordered;
          for (const std::string& n : *names) {
            const Tensor* t = e.find(n);
            if (t == nullptr) {
              return Status::InvalidArgument(what + ": the element has no component '" + n +
                                             "' of output_signature");
            }
            ordered.push_back(*t);
          }
          e = Element(std::move(ordered), *names);
        }
        return std::optional<Element>(std::move(e));
      });
    };
  };
}

// The iterator: next() without the GIL.
class PyIterator {
 public:
  PyIterator(Dataset dataset, Iterator it)
      : dataset_(std::move(dataset)), it_(std::make_unique<Iterator>(std::move(it))) {}
  PyIterator(PyIterator&&) noexcept = default;
  PyIterator& operator=(PyIterator&&) = delete;
  ~PyIterator() { Close(); }

  nb::object Next() {
    if (!it_) throw nb::stop_iteration();
    Result<std::optional<Element>> e = [&] {
      nb::gil_scoped_release release;
      return it_->next();
    }();
    // Ctrl-C while the pipeline worked: KeyboardInterrupt now.
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    if (!e.ok()) ThrowStatus(e.status());
    if (!e->has_value()) throw nb::stop_iteration();
    return ElementToPython(**e);
  }

  nb::bytes Save() {
    Live();
    Result<std::string> state = [&] {
      nb::gil_scoped_release release;
      return it_->save();
    }();
    std::string s = Unwrap(std::move(state));
    return nb::bytes(s.data(), s.size());
  }

  std::string Stats() const {
    Live();
    return it_->stats().ToJson();
  }
  void WriteTrace(const std::string& path) const {
    Live();
    Status s;
    {
      nb::gil_scoped_release release;
      s = it_->WriteTrace(path);
    }
    Check(s);
  }

  // Stops the pipeline and frees it (without the GIL: its threads may be
  // waiting for it to finish a Python call).
  void Close() {
    if (!it_) return;
    if (Finalizing()) {
      (void)it_.release();  // the interpreter is gone: its threads must not wake
      return;
    }
    std::unique_ptr<Iterator> it = std::move(it_);
    nb::gil_scoped_release release;
    it.reset();
  }

 private:
  void Live() const {
    if (!it_) throw nb::value_error("the iterator is closed");
  }
  Dataset dataset_;
  std::unique_ptr<Iterator> it_;
};

PyIterator MakeIterator(const Dataset& ds, nb::object state_) {
  std::optional<nb::bytes> state;
  if (!state_.is_none()) state = nb::cast<nb::bytes>(state_);
  Result<Iterator> it = [&] {
    nb::gil_scoped_release release;
    return ds.iterator();
  }();
  Iterator iterator = Unwrap(std::move(it));
  if (state) {
    std::string_view s(state->c_str(), state->size());
    Status st;
    {
      nb::gil_scoped_release release;
      st = iterator.restore(s);
    }
    Check(st);
  }
  return PyIterator(ds, std::move(iterator));
}

Options OptionsFromKwargs(const nb::kwargs& kw) {
  Options o;
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    if (v.is_none()) continue;
    if (key == "deterministic")
      o.deterministic = nb::cast<bool>(v);
    else if (key == "seed")
      o.seed = nb::cast<uint64_t>(v);
    else if (key == "cpu_budget")
      o.cpu_budget = nb::cast<int>(v);
    else if (key == "max_threads")
      o.max_threads = nb::cast<int>(v);
    else if (key == "ram_budget")
      o.ram_budget = nb::cast<int64_t>(v);
    else if (key == "autotune")
      o.autotune = nb::cast<bool>(v);
    else if (key == "map_and_batch_fusion")
      o.map_and_batch_fusion = nb::cast<bool>(v);
    else
      throw nb::type_error(("with_options: unknown option '" + key + "'").c_str());
  }
  return o;
}

}  // namespace

nb::object MakeMapFunction(MapFn fn, std::string name) {
  return nb::cast(PyMapFunction{std::move(fn), std::move(name)});
}

void RegisterDataset(nb::module_& m) {
  nb::class_<PyMapFunction>(m, "MapFunction",
                            "A map function written in C++ (sluice.io.parse_example, the image "
                            "ops): Dataset.map runs it without the GIL. Calling it applies it to "
                            "one element.")
      .def_ro("name", &PyMapFunction::name)
      .def(
          "then",
          [](const PyMapFunction& a, const PyMapFunction& b) {
            MapFn f = a.fn, g = b.fn;
            return PyMapFunction{[f, g](Element e, const MapContext& c) -> Result<Element> {
                                   SLUICE_ASSIGN_OR_RETURN(Element mid, f(std::move(e), c));
                                   return g(std::move(mid), c);
                                 },
                                 a.name + "+" + b.name};
          },
          "One function: this one, then `other` on its result (one map stage).")
      .def(
          "__call__",
          [](const PyMapFunction& f, nb::handle element, uint64_t seed, int64_t index) {
            Element e = Unwrap(ElementFromPython(element, f.name));
            Result<Element> out = [&] {
              nb::gil_scoped_release release;
              return f.fn(std::move(e), MapContext{.index = index, .seed = seed});
            }();
            return ElementToPython(Unwrap(std::move(out)));
          },
          nb::arg("element"), nb::arg("seed") = 0, nb::arg("index") = 0)
      .def("__repr__",
           [](const PyMapFunction& f) { return "<sluice.MapFunction " + f.name + ">"; });

  nb::class_<PyIterator>(m, "Iterator")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", &PyIterator::Next)
      .def("save", &PyIterator::Save, "The iterator's position as bytes (ds.iterator(state=...)).")
      .def("_stats_json", &PyIterator::Stats)
      .def("write_trace", &PyIterator::WriteTrace, nb::arg("path"),
           "Writes a Chrome/Perfetto trace of each stage's activity (JSON).")
      .def("close", &PyIterator::Close, "Stops the pipeline and frees its buffers now.");

  using D = Dataset;
  nb::class_<D> d(m, "Dataset");
  // Sources.
  d.def_static("range", [](int64_t start, int64_t stop, int64_t step) {
    return Checked(D::range(start, stop, step));
  });
  d.def_static("from_tensor_slices", [](nb::handle structure) {
    Element e = Unwrap(ElementFromPython(structure, "from_tensor_slices"));
    return Checked(D::from_tensor_slices(e.components(), e.names()));
  });
  d.def_static("from_tensors", [](nb::handle structure) {
    return Checked(D::from_tensors(Unwrap(ElementFromPython(structure, "from_tensors"))));
  });
  d.def_static(
      "from_generator",
      [](nb::handle fn, nb::object spec_) {
        const ElementSpec spec = SpecFromList(Opt<SpecList>(spec_));
        return Checked(D::from_generator(PythonGenerator(fn, spec), spec));
      },
      nb::arg("fn"), nb::arg("spec").none());
  d.def_static(
      "list_files",
      [](std::vector<std::string> patterns, bool shuffle, nb::object seed_) {
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return D::list_files(patterns,
                               ListFilesOptions{.shuffle = shuffle, .seed = Opt<uint64_t>(seed_)});
        }();
        return Checked(ds);
      },
      nb::arg("patterns"), nb::arg("shuffle"), nb::arg("seed").none());
  d.def_static("zip", [](nb::list datasets) {
    std::vector<D> inputs;
    for (nb::handle h : datasets) inputs.push_back(DatasetOf(h, "zip"));
    return Checked(D::zip(inputs));
  });
  d.def_static(
      "tfrecord",
      [](std::vector<std::string> files, nb::object compression_, int64_t buffer_size,
         int64_t num_parallel_reads, bool verify, bool use_index, int64_t max_record_size,
         std::string name) {
        TFRecordDatasetOptions o{
            .compression = compression_.is_none()
                               ? Compression::kAuto
                               : Unwrap(ParseCompression(nb::cast<std::string>(compression_))),
            .num_parallel_reads = num_parallel_reads,
            .verify_checksums = verify,
            .use_index = use_index,
            .max_record_size = max_record_size,
            .name = std::move(name)};
        if (buffer_size > 0) o.buffer_size = buffer_size;
        Dataset ds = [&] {
          nb::gil_scoped_release release;
          return TFRecordDataset(files, o);
        }();
        return Checked(ds);
      },
      nb::arg("files"), nb::arg("compression").none(), nb::arg("buffer_size"),
      nb::arg("num_parallel_reads"), nb::arg("verify"), nb::arg("use_index"),
      nb::arg("max_record_size"), nb::arg("name"));

  // Transformations.
  d.def(
      "map_builtin",
      [](const D& ds, const PyMapFunction& f, int64_t parallelism, nb::object deterministic_,
         std::string name) {
        return Checked(ds.map(f.fn, MapOptions{.parallelism = parallelism,
                                               .deterministic = Opt<bool>(deterministic_),
                                               .name = name.empty() ? f.name : name}));
      },
      nb::arg("fn"), nb::arg("parallelism"), nb::arg("deterministic").none(), nb::arg("name"));
  d.def(
      "map_python",
      [](const D& ds, nb::handle fn, int64_t parallelism, nb::object deterministic_,
         std::string name) {
        return Checked(ds.map(PythonMapFn(fn, name.empty() ? "map" : name),
                              MapOptions{.parallelism = parallelism,
                                         .deterministic = Opt<bool>(deterministic_),
                                         .name = name}));
      },
      nb::arg("fn"), nb::arg("parallelism"), nb::arg("deterministic").none(), nb::arg("name"));
  d.def("filter_python", [](const D& ds, nb::handle fn, std::string name) {
    PyRef f(fn);
    const std::string what = name.empty() ? "filter" : name;
    PredicateFn pred = [f, what](const Element& e) -> Result<bool> {
      return UnderGil<bool>(what, [&]() -> Result<bool> {
        nb::object out = CallOnElement(f.get(), e);
        if (nb::isinstance<nb::bool_>(out)) return nb::cast<bool>(out);
        // A NumPy bool (or 0-d array) as tf.data's scalar bool tensor.
        nb::object np_bool = nb::module_::import_("numpy").attr("asarray")(out);
        if (nb::cast<std::string>(np_bool.attr("dtype").attr("kind")) != "b" ||
            nb::cast<int64_t>(np_bool.attr("size")) != 1) {
          return Status::InvalidArgument(what + ": the predicate must return a bool scalar, got " +
                                         nb::cast<std::string>(nb::repr(out)));
        }
        return nb::cast<bool>(np_bool.attr("item")());
      });
    };
    return Checked(ds.filter(pred, FilterOptions{.name = name}));
  });
  d.def("flat_map_python", [](const D& ds, nb::handle fn) {
    return Checked(ds.flat_map(PythonDatasetFn(fn, "flat_map")));
  });
  d.def(
      "interleave_python",
      [](const D& ds, nb::handle fn, int64_t cycle_length, int64_t block_length,
         int64_t parallelism, nb::object deterministic_, std::string name) {
        return Checked(ds.interleave(PythonDatasetFn(fn, name.empty() ? "interleave" : name),
                                     InterleaveOptions{.cycle_length = cycle_length,
                                                       .block_length = block_length,
                                                       .parallelism = parallelism,
                                                       .deterministic = Opt<bool>(deterministic_),
                                                       .name = name}));
      },
      nb::arg("fn"), nb::arg("cycle_length"), nb::arg("block_length"), nb::arg("parallelism"),
      nb::arg("deterministic").none(), nb::arg("name"));
  d.def(
      "shuffle",
      [](const D& ds, int64_t buffer_size, nb::object seed_, bool reshuffle, std::string name) {
        return Checked(ds.shuffle(buffer_size, ShuffleOptions{.seed = Opt<uint64_t>(seed_),
                                                              .reshuffle_each_iteration = reshuffle,
                                                              .name = name}));
      },
      nb::arg("buffer_size"), nb::arg("seed").none(), nb::arg("reshuffle"), nb::arg("name"));
  d.def(
      "global_shuffle",
      [](const D& ds, nb::object seed_, bool reshuffle, std::string name) {
        return Checked(ds.global_shuffle(GlobalShuffleOptions{
            .seed = Opt<uint64_t>(seed_), .reshuffle_each_iteration = reshuffle, .name = name}));
      },
      nb::arg("seed").none(), nb::arg("reshuffle"), nb::arg("name"));
  d.def("batch",
        [](const D& ds, int64_t n, bool drop_remainder, bool parallel_copy, std::string name) {
          return Checked(ds.batch(n, BatchOptions{.drop_remainder = drop_remainder,
                                                  .parallel_copy = parallel_copy,
                                                  .name = name}));
        });
  d.def(
      "padded_batch",
      [](const D& ds, int64_t n, nb::object shapes_, nb::object values_, bool drop_remainder,
         std::string name) {
        PaddedBatchOptions o{.drop_remainder = drop_remainder, .name = name};
        if (!shapes_.is_none()) {
          for (nb::handle s : shapes_) {
            o.padded_shapes.push_back(s.is_none() ? Shape::UnknownRank()
                                                  : Shape(nb::cast<std::vector<int64_t>>(s)));
          }
        }
        if (!values_.is_none()) {
          const ElementSpec& spec = ds.element_spec();
          size_t i = 0;
          for (nb::handle v : values_) {
            std::optional<DType> want;
            if (spec.known() && i < spec.size()) want = spec.components()[i].dtype;
            o.padding_values.push_back(
                Unwrap(TensorFromPython(v, "padded_batch padding_values", want)));
            ++i;
          }
        }
        return Checked(ds.padded_batch(n, o));
      },
      nb::arg("batch_size"), nb::arg("padded_shapes").none(), nb::arg("padding_values").none(),
      nb::arg("drop_remainder"), nb::arg("name"));
  d.def("unbatch", [](const D& ds) { return Checked(ds.unbatch()); });
  d.def("prefetch", [](const D& ds, int64_t n, std::string name) {
    return Checked(ds.prefetch(n, PrefetchOptions{.name = name}));
  });
  d.def("prefetch_to_device", [](const D& ds, std::string device, int64_t n) {
    return Checked(ds.prefetch_to_device(std::string_view(device), n));
  });
  d.def("repeat", [](const D& ds, int64_t count) { return Checked(ds.repeat(count)); });
  d.def("take", [](const D& ds, int64_t count) { return Checked(ds.take(count)); });
  d.def("skip", [](const D& ds, int64_t count) { return Checked(ds.skip(count)); });
  d.def("shard", [](const D& ds, int64_t num_shards, int64_t index, bool equal, bool pad,
                    std::string weight_name) {
    return Checked(ds.shard(num_shards, index,
                            ShardOptions{.equal = equal, .pad = pad, .weight_name = weight_name}));
  });
  d.def("cache", [](const D& ds, std::string filename) { return Checked(ds.cache(filename)); });
  d.def("concatenate", [](const D& ds, nb::handle other) {
    return Checked(ds.concatenate(DatasetOf(other, "concatenate")));
  });
  d.def("enumerate", [](const D& ds, int64_t start) { return Checked(ds.enumerate(start)); });
  d.def("ignore_errors", [](const D& ds) { return Checked(ds.ignore_errors()); });
  d.def("assert_cardinality",
        [](const D& ds, int64_t expected) { return Checked(ds.assert_cardinality(expected)); });
  d.def("with_options",
        [](const D& ds, nb::kwargs kw) { return Checked(ds.with_options(OptionsFromKwargs(kw))); });
  d.def("reduce_python", [](const D& ds, nb::handle initial, nb::handle fn) {
    Element init = Unwrap(ElementFromPython(initial, "reduce initial_state"));
    PyRef f(fn);
    ReduceFn r = [f](Element state, Element element) -> Result<Element> {
      return UnderGil<Element>("reduce", [&]() -> Result<Element> {
        nb::object out = f.get()(ElementToPython(state), ElementToPython(element));
        return ElementFromPython(out, "reduce");
      });
    };
    Result<Element> out = [&] {
      nb::gil_scoped_release release;
      return ds.reduce(std::move(init), r);
    }();
    return ElementToPython(Unwrap(std::move(out)));
  });
  // Consuming and introspection.
  d.def("iterator", &MakeIterator, nb::arg("state").none() = nb::none());
  d.def("cardinality", [](const D& ds) {
    nb::gil_scoped_release release;
    return ds.cardinality();
  });
  d.def("element_spec", [](const D& ds) { return SpecToList(ds.element_spec()); });
  d.def("random_access", &D::random_access);
  d.def("at", [](const D& ds, int64_t index) {
    Result<Element> e = [&] {
      nb::gil_scoped_release release;
      return ds.at(index);
    }();
    return ElementToPython(Unwrap(std::move(e)));
  });
  d.def("debug_string", &D::DebugString);
  d.def("source_files", &D::source_files);
  d.def("with_source_files", [](const D& ds, std::vector<std::string> files) {
    return Checked(ds.with_source_files(std::move(files)));
  });
}

}  // namespace sluice::python
