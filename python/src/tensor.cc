// Tensors and elements across the Python boundary (sluice_py.h), and the
// sluice.Tensor class: a handle on a sluice Tensor that NumPy views through
// __array_interface__ and that torch, JAX and NumPy take through DLPack
// (__dlpack__ / __dlpack_device__), both without copying.
#include <dlpack/dlpack.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <string>
#include <vector>

#include "sluice/core/dlpack.h"
#include "sluice_py.h"

namespace sluice::python {
namespace {

// Python callables kept for the life of the process (never released: the
// interpreter outlives every call).
struct NumPy {
  nb::object asarray, ascontiguousarray, array, empty, object_dtype;
};
const NumPy& numpy() {
  static const NumPy* np = [] {
    nb::module_ m = nb::module_::import_("numpy");
    auto* n = new NumPy{m.attr("asarray"), m.attr("ascontiguousarray"), m.attr("array"),
                        m.attr("empty"), m.attr("dtype")("O")};
    return n;
  }();
  return *np;
}

// NumPy's array-interface type string; null for dtypes NumPy lacks.
const char* TypeStr(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "|b1";
    case DType::kUInt8: return "|u1";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kBFloat16:
    case DType::kString: break;
  }
  return nullptr;
}

// The sluice dtype of a NumPy dtype string (arr.dtype.str), or an error.
Result<DType> DTypeOfNumPy(const std::string& str, std::string_view what) {
  const std::string t = str.size() > 1 ? str.substr(1) : str;
  if (t == "b1") return DType::kBool;
  if (t == "u1") return DType::kUInt8;
  if (t == "i4") return DType::kInt32;
  if (t == "i8") return DType::kInt64;
  if (t == "f2") return DType::kFloat16;
  if (t == "f4") return DType::kFloat32;
  if (t == "f8") return DType::kFloat64;
  return Status::InvalidArgument(
      std::string(what) + ": NumPy dtype '" + str +
      "' has no sluice dtype (bool, uint8, int32, int64, float16, "
      "float32, float64, string); cast it first, e.g. .astype(np.int32)");
}

// The NumPy dtype name of a sluice dtype (tf.dtypes' names are NumPy's),
// "object" for strings.
std::string NumPyName(DType dtype) {
  return dtype == DType::kString ? "object" : std::string(DTypeName(dtype));
}

nb::tuple ShapeTuple(const Shape& shape) {
  nb::list dims;
  for (int64_t d : shape.dims()) dims.append(d);
  return nb::tuple(dims);
}

// Any valid address for an empty array (NumPy refuses a null one).
void* EmptyAddress() {
  alignas(64) static unsigned char byte;
  return &byte;
}

nb::object ArrayInterface(const PyTensor& t) {
  const Tensor& x = t.tensor;
  if (x.device().is_gpu()) {
    throw nb::type_error(("this tensor is in " + x.device().ToString() +
                          "'s memory; hand it over with DLPack (torch.from_dlpack, "
                          "jax.dlpack.from_dlpack) instead of NumPy")
                             .c_str());
  }
  const char* typestr = TypeStr(x.dtype());
  if (typestr == nullptr) {
    throw nb::type_error(("NumPy has no " + std::string(DTypeName(x.dtype())) +
                          "; hand the tensor over with DLPack (torch.from_dlpack) instead")
                             .c_str());
  }
  nb::dict d;
  d["version"] = 3;
  d["shape"] = ShapeTuple(x.shape());
  d["typestr"] = typestr;
  void* data = x.num_elements() == 0 ? EmptyAddress() : const_cast<void*>(x.raw_data());
  d["data"] = nb::make_tuple(reinterpret_cast<uintptr_t>(data), false);
  return d;
}

void DeleteUnusedCapsule(PyObject* capsule) {
  // A capsule still named "dltensor" was never consumed: we own it.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

nb::object ToDLPackCapsule(const PyTensor& t, nb::handle /*stream*/) {
  // Device tensors come out of prefetch_to_device and the nvJPEG batch
  // stage only after their copies landed (the stages wait for them before
  // handing an element out), so any consumer stream may use them at once:
  // the stream protocol has nothing to synchronize.
  DLManagedTensor* m = Unwrap(ToDLPack(t.tensor));
  PyObject* capsule = PyCapsule_New(m, "dltensor", DeleteUnusedCapsule);
  if (capsule == nullptr) {
    m->deleter(m);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

nb::tuple DLPackDevice(const PyTensor& t) {
  const Device d = t.tensor.device();
  if (d.is_gpu()) return nb::make_tuple(static_cast<int>(kDLCUDA), d.index());
  return nb::make_tuple(static_cast<int>(kDLCPU), 0);
}

nb::object StringsToPython(const Tensor& t) {
  auto views = t.flat<std::string_view>();
  if (t.shape().rank() == 0) return nb::bytes(views[0].data(), views[0].size());
  const NumPy& np = numpy();
  nb::object out = np.empty(ShapeTuple(t.shape()), nb::arg("dtype") = np.object_dtype);
  // A fresh np.empty is C-contiguous and holds one owned reference (None)
  // per element: its data is an array of PyObject*, written directly
  // (indexing element by element cost more than making the bytes).
  nb::object interface = out.attr("__array_interface__");
  const auto address = nb::cast<uintptr_t>(nb::tuple(interface["data"])[0]);
  PyObject** items = reinterpret_cast<PyObject**>(address);
  for (size_t i = 0; i < views.size(); ++i) {
    PyObject* b =
        PyBytes_FromStringAndSize(views[i].data(), static_cast<Py_ssize_t>(views[i].size()));
    if (b == nullptr) throw nb::python_error();
    PyObject* old = items[i];
    items[i] = b;
    Py_XDECREF(old);
  }
  return out;
}

Result<Tensor> StringsFromNumPy(nb::handle array, std::string_view what) {
  nb::object flat = array.attr("reshape")(-1);
  const size_t n = nb::len(flat);
  std::vector<std::string> values;
  values.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    nb::object v = flat[nb::int_(i)];
    if (nb::isinstance<nb::bytes>(v)) {
      nb::bytes b = nb::borrow<nb::bytes>(v);
      values.emplace_back(b.c_str(), b.size());
    } else if (nb::isinstance<nb::str>(v)) {
      values.push_back(nb::cast<std::string>(v));
    } else if (nb::hasattr(v, "tobytes") && nb::hasattr(v, "dtype") &&
               nb::cast<std::string>(v.attr("dtype").attr("kind")) == "S") {
      nb::bytes b = nb::borrow<nb::bytes>(v.attr("tobytes")());
      values.emplace_back(b.c_str(), b.size());
    } else {
      return Status::InvalidArgument(std::string(what) + ": element " + std::to_string(i) +
                                     " of an object array is " + TypeName(v) +
                                     ", not bytes or str");
    }
  }
  std::vector<std::string_view> views(values.begin(), values.end());
  std::vector<int64_t> dims;
  for (nb::handle d : array.attr("shape")) dims.push_back(nb::cast<int64_t>(d));
  return Tensor::FromStrings(views, Shape(dims));
}

}  // namespace

std::string TypeName(nb::handle value) {
  return nb::cast<std::string>(nb::str(value.type().attr("__name__")));
}

nb::object TensorToPython(const Tensor& tensor) {
  if (tensor.dtype() == DType::kString) return StringsToPython(tensor);
  nb::object handle = nb::cast(PyTensor{tensor});
  if (tensor.device().is_gpu() || TypeStr(tensor.dtype()) == nullptr) return handle;
  return numpy().asarray(handle);
}

Result<Tensor> TensorFromPython(nb::handle value, std::string_view what,
                                std::optional<DType> want) {
  try {
    if (nb::isinstance<PyTensor>(value)) return nb::cast<const PyTensor&>(value).tensor;
    const bool str_or_bytes = nb::isinstance<nb::bytes>(value) || nb::isinstance<nb::str>(value);
    if (want == DType::kString || (!want && str_or_bytes)) {
      if (nb::isinstance<nb::bytes>(value)) {
        nb::bytes b = nb::borrow<nb::bytes>(value);
        return Tensor::StringScalar(std::string_view(b.c_str(), b.size()));
      }
      if (nb::isinstance<nb::str>(value)) {
        return Tensor::StringScalar(nb::cast<std::string>(value));
      }
    }
    const NumPy& np = numpy();
    nb::object array;
    // asarray, not ascontiguousarray: that one makes scalars 1-d.
    if (want && *want != DType::kString && *want != DType::kBFloat16) {
      array = np.asarray(value, nb::arg("dtype") = NumPyName(*want));
    } else {
      array = np.asarray(value);
      // NumPy's 'S' arrays drop each string's trailing zero bytes: bytes
      // given in Python lists stay whole in an object array.
      if (!nb::hasattr(value, "dtype") &&
          nb::cast<std::string>(array.attr("dtype").attr("kind")) == "S") {
        array = np.array(value, nb::arg("dtype") = np.object_dtype);
      }
      // Python floats are float32, as tf.constant makes them.
      if (!want && !nb::hasattr(value, "dtype") &&
          nb::cast<std::string>(array.attr("dtype").attr("str")) == "<f8") {
        array = array.attr("astype")("float32");
      }
    }
    if (!nb::cast<bool>(array.attr("flags").attr("c_contiguous"))) {
      array = np.ascontiguousarray(array);
    }
    const std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
    if (kind == "U" || kind == "S" || kind == "O") return StringsFromNumPy(array, what);
    if (want == DType::kString) {
      return Status::InvalidArgument(std::string(what) + ": expected strings, got NumPy dtype " +
                                     nb::cast<std::string>(nb::str(array.attr("dtype"))));
    }
    SLUICE_ASSIGN_OR_RETURN(
        DType dtype, DTypeOfNumPy(nb::cast<std::string>(array.attr("dtype").attr("str")), what));
    std::vector<int64_t> dims;
    for (nb::handle d : array.attr("shape")) dims.push_back(nb::cast<int64_t>(d));
    SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, Shape(dims)));
    if (t.byte_size() > 0) {
      nb::object data = array.attr("__array_interface__")["data"];
      const auto address = nb::cast<uintptr_t>(data[0]);
      std::memcpy(t.raw_data(), reinterpret_cast<const void*>(address), t.byte_size());
    }
    return t;
  } catch (nb::python_error& e) {
    return CapturePythonError(e, what);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string(what) + ": " + e.what());
  }
}

nb::object ElementToPython(const Element& element) {
  const size_t n = element.size();
  const std::vector<std::string>& names = element.names();
  bool all_named = n > 0;
  for (const std::string& name : names) all_named = all_named && !name.empty();
  if (all_named) {
    nb::dict d;
    for (size_t i = 0; i < n; ++i)
      d[nb::str(names[i].c_str(), names[i].size())] = TensorToPython(element[i]);
    return d;
  }
  if (n == 1) return TensorToPython(element[0]);
  nb::list items;
  for (size_t i = 0; i < n; ++i) items.append(TensorToPython(element[i]));
  return nb::tuple(items);
}

Result<Element> ElementFromPython(nb::handle value, std::string_view what,
                                  const ElementSpec* spec) {
  const bool have_spec = spec != nullptr && spec->known();
  // The spec's dtype for component i, or for the component called `name`
  // (a dict's keys may come in another order than the spec's).
  auto want = [&](size_t i, const std::string* name) -> std::optional<DType> {
    if (!have_spec) return std::nullopt;
    if (name != nullptr) {
      for (const ComponentSpec& c : spec->components()) {
        if (c.name == *name) return c.dtype;
      }
    }
    if (i < spec->size()) return spec->components()[i].dtype;
    return std::nullopt;
  };
  auto component = [&](nb::handle v, size_t i, const std::string* name) -> Result<Tensor> {
    const std::string label = name != nullptr ? "'" + *name + "'" : std::to_string(i);
    if (nb::isinstance<nb::dict>(v)) {
      return Status::InvalidArgument(std::string(what) + ": component " + label +
                                     " is a dict; sluice elements are flat (a tuple or a dict "
                                     "of tensors)");
    }
    return TensorFromPython(v, std::string(what) + " (component " + label + ")", want(i, name));
  };
  Element out;
  if (nb::isinstance<nb::dict>(value)) {
    nb::dict d = nb::borrow<nb::dict>(value);
    std::vector<Tensor> tensors;
    std::vector<std::string> names;
    size_t i = 0;
    for (auto [k, v] : d) {
      if (!nb::isinstance<nb::str>(k)) {
        return Status::InvalidArgument(std::string(what) + ": dict keys must be str, got " +
                                       TypeName(k));
      }
      std::string name = nb::cast<std::string>(k);
      SLUICE_ASSIGN_OR_RETURN(Tensor t, component(v, i++, &name));
      tensors.push_back(std::move(t));
      names.push_back(std::move(name));
    }
    out = Element(std::move(tensors), std::move(names));
  } else if (nb::isinstance<nb::tuple>(value)) {
    nb::tuple tup = nb::borrow<nb::tuple>(value);
    std::vector<Tensor> tensors;
    for (size_t i = 0; i < tup.size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(Tensor t, component(tup[i], i, nullptr));
      tensors.push_back(std::move(t));
    }
    out = Element(std::move(tensors));
  } else {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, TensorFromPython(value, what, want(0, nullptr)));
    out = Element(std::vector<Tensor>{std::move(t)});
  }
  if (have_spec && out.size() != spec->size()) {
    return Status::InvalidArgument(std::string(what) + ": got " + std::to_string(out.size()) +
                                   " components, the spec " + spec->DebugString() + " has " +
                                   std::to_string(spec->size()));
  }
  return out;
}

void RegisterTensor(nb::module_& m) {
  nb::class_<PyTensor>(m, "Tensor",
                       "A sluice tensor: NumPy views it (np.asarray, __array_interface__), and "
                       "torch.from_dlpack, jax.dlpack.from_dlpack and np.from_dlpack take it "
                       "through DLPack, all without copying. Device tensors (gpu:N) export CUDA "
                       "DLPack.")
      .def(nb::init<>())
      .def_prop_ro("shape", [](const PyTensor& t) { return ShapeTuple(t.tensor.shape()); })
      .def_prop_ro("dtype",
                   [](const PyTensor& t) { return std::string(DTypeName(t.tensor.dtype())); })
      .def_prop_ro("device", [](const PyTensor& t) { return t.tensor.device().ToString(); })
      .def_prop_ro("nbytes", [](const PyTensor& t) { return t.tensor.byte_size(); })
      .def_prop_ro(
          "data_ptr",
          [](const PyTensor& t) { return reinterpret_cast<uintptr_t>(t.tensor.raw_data()); },
          "The address of the first element (sluice's buffer).")
      .def_prop_ro("__array_interface__", &ArrayInterface)
      .def("__dlpack__",
           [](const PyTensor& t, nb::kwargs kw) {
             nb::handle stream = kw.contains("stream") ? nb::handle(kw["stream"]) : nb::none();
             return ToDLPackCapsule(t, stream);
           })
      .def("__dlpack_device__", &DLPackDevice)
      .def(
          "numpy", [](nb::handle self) { return numpy().asarray(self); },
          "A NumPy array viewing the tensor's bytes (host memory only).")
      .def("__repr__", [](const PyTensor& t) {
        return "<sluice.Tensor " + t.tensor.DebugString(6) + " on " + t.tensor.device().ToString() +
               ">";
      });
  m.def("_as_tensor", [](nb::handle value) {
    return PyTensor{Unwrap(TensorFromPython(value, "sluice.Tensor"))};
  });
  m.def("_from_dlpack", [](nb::handle value) {
    // Producer objects (torch, JAX, NumPy) hand out a capsule; a capsule
    // itself is taken as it is.
    nb::object capsule =
        nb::hasattr(value, "__dlpack__") ? value.attr("__dlpack__")() : nb::borrow(value);
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    if (m == nullptr) throw nb::python_error();
    Tensor t = Unwrap(FromDLPack(m));
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    return PyTensor{std::move(t)};
  });
}

}  // namespace sluice::python
