// The pieces every binding file uses (sluice_py.h, "Pieces every binding
// file uses").
#include "sluice_py.h"
// (sluice_py.h first: every file sees the same casters.)
#include <string>

namespace sluice::python {

Dataset Checked(Dataset ds) {
  if (!ds.status().ok()) ThrowStatus(ds.status());
  return ds;
}

const Dataset& DatasetOf(nb::handle py_dataset, const std::string& what) {
  nb::handle h = py_dataset;
  if (nb::hasattr(h, "_ds")) h = h.attr("_ds");
  if (!nb::isinstance<Dataset>(h)) {
    throw nb::type_error(
        (what + ": expected a sluice.Dataset, got " + TypeName(py_dataset)).c_str());
  }
  return nb::cast<const Dataset&>(h);
}

nb::object CallSpread(nb::handle fn, nb::handle args) {
  if (nb::isinstance<nb::tuple>(args)) {
    PyObject* r = PyObject_Call(fn.ptr(), args.ptr(), nullptr);
    if (r == nullptr) throw nb::python_error();
    return nb::steal(r);
  }
  return fn(args);
}

nb::object CallOnElement(nb::handle fn, const Element& element) {
  return CallSpread(fn, ElementToPython(element));
}

}  // namespace sluice::python
