// _sluice._save, _sluice._load and _sluice._snapshot: Dataset.save,
// Dataset.load and Dataset.snapshot for the Python package
// (python/sluice/dataset.py wraps them with tf.data's signatures).
//
// The GIL: save() and load() release it while the pipeline runs; shard_func
// and reader_func take it only around their own call.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/snapshot.h"
#include "sluice/records/compression.h"
#include "sluice_py.h"

namespace sluice::python {
namespace {

// None: `none`; else tf.data's names ("", "GZIP", "ZLIB", "AUTO", "NONE").
Compression CompressionArg(nb::handle value, Compression none) {
  if (value.is_none()) return none;
  return Unwrap(ParseCompression(nb::cast<std::string>(value)));
}

ShardFn PythonShardFn(nb::handle fn, std::string what) {
  if (fn.is_none()) return nullptr;
  PyRef f(fn);
  return [f, what](const Element& e) -> Result<int64_t> {
    return UnderGil<int64_t>(what, [&]() -> Result<int64_t> {
      nb::object arg = ElementToPython(e);
      nb::object out;
      if (nb::isinstance<nb::tuple>(arg)) {
        PyObject* r = PyObject_Call(f.get().ptr(), arg.ptr(), nullptr);
        if (r == nullptr) throw nb::python_error();
        out = nb::steal(r);
      } else {
        out = f.get()(arg);
      }
      // An int, a NumPy integer or a 0-d integer array.
      PyObject* index = PyNumber_Index(out.ptr());
      if (index == nullptr) {
        PyErr_Clear();
        return Status::InvalidArgument(what + ": shard_func must return an int, got " +
                                       TypeName(out));
      }
      return nb::cast<int64_t>(nb::steal(index));
    });
  };
}

ReaderFn PythonReaderFn(nb::handle fn, std::string what) {
  if (fn.is_none()) return nullptr;
  PyRef f(fn);
  return [f, what](const std::vector<Dataset>& shards) -> Result<Dataset> {
    return UnderGil<Dataset>(what, [&]() -> Result<Dataset> {
      nb::object wrap = nb::module_::import_("sluice").attr("Dataset");
      nb::list datasets;
      for (const Dataset& s : shards) datasets.append(wrap(nb::cast(s)));
      nb::object out = f.get()(datasets);
      nb::handle h = out;
      if (nb::hasattr(h, "_ds")) h = h.attr("_ds");
      if (!nb::isinstance<Dataset>(h)) {
        return Status::InvalidArgument(what + ": reader_func must return a sluice.Dataset, got " +
                                       TypeName(out));
      }
      return nb::cast<Dataset>(h);
    });
  };
}

using SpecList =
    std::vector<std::tuple<std::string, std::string, std::optional<std::vector<int64_t>>>>;

ElementSpec SpecFromList(const SpecList& list) {
  std::vector<ComponentSpec> components;
  for (const auto& [name, dtype, shape] : list) {
    components.push_back(
        {name, Unwrap(DTypeFromName(dtype)), shape ? Shape(*shape) : Shape::UnknownRank()});
  }
  return ElementSpec(std::move(components));
}

}  // namespace

void RegisterSnapshot(nb::module_& m) {
  m.def(
      "_save",
      [](const Dataset& ds, std::string path, nb::object compression, nb::object shard_func,
         int64_t num_shards) {
        SaveOptions o;
        o.compression = CompressionArg(compression, Compression::kNone);
        o.shard_func = PythonShardFn(shard_func, "save: shard_func");
        o.num_shards = num_shards;
        Status s;
        {
          nb::gil_scoped_release release;
          s = ds.save(path, std::move(o));
        }
        Check(s);
      },
      nb::arg("dataset"), nb::arg("path"), nb::arg("compression").none(),
      nb::arg("shard_func").none(), nb::arg("num_shards"));
  m.def(
      "_load",
      [](std::string path, std::optional<SpecList> spec, nb::object compression,
         nb::object reader_func) {
        LoadOptions o;
        if (spec) o.element_spec = SpecFromList(*spec);
        o.compression = CompressionArg(compression, Compression::kAuto);
        o.reader_func = PythonReaderFn(reader_func, "load: reader_func");
        Dataset out = [&] {
          nb::gil_scoped_release release;
          return Dataset::load(path, std::move(o));
        }();
        Check(out.status());
        return out;
      },
      nb::arg("path"), nb::arg("element_spec").none(), nb::arg("compression").none(),
      nb::arg("reader_func").none());
  m.def(
      "_snapshot",
      [](const Dataset& ds, std::string path, nb::object compression, nb::object reader_func,
         nb::object shard_func, int64_t num_shards, std::string name) {
        SnapshotOptions o;
        o.compression = CompressionArg(compression, Compression::kAuto);
        o.reader_func = PythonReaderFn(reader_func, "snapshot: reader_func");
        o.shard_func = PythonShardFn(shard_func, "snapshot: shard_func");
        o.num_shards = num_shards;
        o.name = std::move(name);
        Dataset out = ds.snapshot(path, std::move(o));
        Check(out.status());
        return out;
      },
      nb::arg("dataset"), nb::arg("path"), nb::arg("compression").none(),
      nb::arg("reader_func").none(), nb::arg("shard_func").none(), nb::arg("num_shards"),
      nb::arg("name"));
  m.def("_snapshot_run_path",
        [](const Dataset& ds, std::string path) { return SnapshotRunPath(ds, path); });
}

}  // namespace sluice::python
