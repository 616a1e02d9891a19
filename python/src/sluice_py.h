// The pieces of the Python extension (_sluice) that its files share: how
// tensors and elements cross between sluice and Python, how a Status becomes
// a Python exception and a Python exception a Status, and Python callables
// held by the pipeline's threads.
//
// The GIL: every function here that takes or returns a nanobind object must
// be called with the GIL held. PyRef is the one exception: copies of it may
// be made and dropped on any thread (the last one takes the GIL to release
// its object).
#ifndef SLUICE_PYTHON_SRC_SLUICE_PY_H_
#define SLUICE_PYTHON_SRC_SLUICE_PY_H_

#include <nanobind/nanobind.h>
// Every file sees the same casters (a caster missing from one file would
// silently change what nb::cast<std::string> does in all of them).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>

#include "sluice/core/element.h"
#include "sluice/core/result.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/element_spec.h"
#include "sluice/records/feature_spec.h"

namespace sluice::python {

namespace nb = nanobind;

// ---- Errors --------------------------------------------------------------

// Raises the sluice.errors class of the status's code (DataLossError, ...)
// carrying its message. If the status carries a Python exception that a
// callable raised (CapturePythonError), that exception is raised instead,
// with its own traceback and the pipeline's context (stage, element) as a
// note. REQUIRES: !status.ok().
[[noreturn]] void ThrowStatus(const Status& status);

template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(result).value();
}
inline void Check(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

// Turns the Python exception being handled into a Status that can travel
// through the pipeline to the consumer, where ThrowStatus raises the same
// exception again. KeyboardInterrupt and SystemExit become Cancelled.
Status CapturePythonError(nb::python_error& error, std::string_view what);

// ---- Python objects held by C++ ------------------------------------------

// True once the interpreter is finalizing (or gone): no Python call is safe.
bool Finalizing();

// A reference to a Python object that C++ code on any thread may copy and
// drop: the object is released under the GIL when the last copy goes (and
// leaked, harmlessly, if the interpreter is already finalizing).
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(nb::handle object);  // REQUIRES: the GIL
  // REQUIRES: the GIL.
  nb::handle get() const { return holder_ ? holder_->object : nb::handle(); }
  explicit operator bool() const { return holder_ != nullptr; }

 private:
  struct Holder {
    PyObject* object = nullptr;
    ~Holder();
  };
  std::shared_ptr<Holder> holder_;
};

// The name of a Python object's type ("int", "ndarray"), for messages.
std::string TypeName(nb::handle value);

// ---- Tensors and elements --------------------------------------------------

// The Python class sluice.Tensor wraps one of these: a Tensor, with the
// shape and strides its __array_interface__ and DLPack export hand out.
struct PyTensor {
  Tensor tensor;
};

// A tensor for Python: a NumPy array viewing the tensor's bytes (numeric,
// host memory; the array keeps the bytes alive), bytes for a string scalar,
// a NumPy object array of bytes for other string tensors, and a
// sluice.Tensor for what NumPy cannot hold (device memory, bfloat16).
nb::object TensorToPython(const Tensor& tensor);
// A Python value as a Tensor: a sluice.Tensor (shared, no copy), bytes or
// str (a string scalar), anything NumPy takes (copied into a new tensor;
// Python floats become float32 as in tf.constant, ints int64, str/bytes
// arrays strings). InvalidArgument naming `what` and the type otherwise.
// With `want`, the value is converted to that dtype (as NumPy's astype;
// strings only from strings).
Result<Tensor> TensorFromPython(nb::handle value, std::string_view what,
                                std::optional<DType> want = std::nullopt);

// An element's Python structure: a dict when every component is named,
// the value alone for one unnamed component, else a tuple.
nb::object ElementToPython(const Element& element);
// The inverse: a dict gives named components, a tuple its components, any
// other value one component.
// With a known `spec`, each component is converted to its dtype and the
// element must have its number of components.
Result<Element> ElementFromPython(nb::handle value, std::string_view what,
                                  const ElementSpec* spec = nullptr);

// ---- Pieces every binding file uses ----------------------------------------

// `ds`, or its build error raised at once (where the transformation was
// written). REQUIRES: the GIL.
Dataset Checked(Dataset ds);
// The C++ Dataset inside a sluice.Dataset or a _sluice.Dataset; TypeError
// naming `what` otherwise. REQUIRES: the GIL.
const Dataset& DatasetOf(nb::handle py_dataset, const std::string& what);
// fn(*args) when args is a tuple, fn(args) otherwise: tf.data's calling
// convention. REQUIRES: the GIL.
nb::object CallSpread(nb::handle fn, nb::handle args);
// CallSpread on an element's Python structure: a tuple's components as
// separate arguments, a dict or one value as one argument. REQUIRES: the GIL.
nb::object CallOnElement(nb::handle fn, const Element& element);

// Runs `body` with the GIL taken (from a pipeline thread), a Python
// exception or a C++ one from nanobind becoming a Status for the pipeline
// (CapturePythonError; `what` names the stage or function).
template <typename T, typename Body>
Result<T> UnderGil(const std::string& what, Body&& body) {
  nb::gil_scoped_acquire gil;
  try {
    return body();
  } catch (nb::python_error& e) {
    return CapturePythonError(e, what);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(what + ": " + e.what());
  }
}

// ---- Built-in map functions ----------------------------------------------

// sluice.MapFunction: a map function written in C++ (sluice.io.parse_example,
// the image ops, ...). Dataset.map runs it without the GIL; calling it from
// Python applies it to one element.
struct PyMapFunction {
  MapFn fn;
  std::string name;
};
// A new sluice.MapFunction object.
nb::object MakeMapFunction(MapFn fn, std::string name);

// A ParseSpec from sluice.io's list of feature tuples (io.cc).
ParseSpec SpecFromList(nb::handle list);
// Tensor of serialized protos from bytes, a list of bytes or an array
// (io.cc); `single`: a scalar is required, else a vector.
Tensor SerializedFromPython(nb::handle value, const char* what, bool single);

// ---- Registration of the module's parts -------------------------------------

void RegisterTensor(nb::module_& m);
void RegisterDataset(nb::module_& m);
void RegisterIo(nb::module_& m);
void RegisterImage(nb::module_& m);
void RegisterDistribute(nb::module_& m);
void RegisterText(nb::module_& m);
void RegisterNpy(nb::module_& m);
void RegisterParquet(nb::module_& m);
void RegisterWebDataset(nb::module_& m);
void RegisterMixing(nb::module_& m);  // mixing.cc
void RegisterWindow(nb::module_& m);
void RegisterSmallStages(nb::module_& m);  // small_stages.cc
void RegisterPack(nb::module_& m);
void RegisterSnapshot(nb::module_& m);
void RegisterIoSequence(nb::module_& m);
void RegisterGfile(nb::module_& m);   // filesystem.cc
void RegisterRemote(nb::module_& m);  // remote.cc

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_SLUICE_PY_H_
