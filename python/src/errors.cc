// Status <-> Python exceptions (sluice_py.h).
//
// A Python exception raised inside a callable the pipeline runs (a map
// function, a generator) is kept here, keyed by a number that travels in
// the Status message through the pipeline; the consumer's ThrowStatus finds
// the number and raises the very same exception object, traceback and all.
// Exceptions whose Status never reaches a consumer (skipped by
// ignore_errors, or the iterator dropped first) are forgotten oldest first.
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "sluice_py.h"

namespace sluice::python {
namespace {

constexpr std::string_view kTag = "[python exception #";
constexpr size_t kMaxKept = 256;

struct Kept {
  std::mutex mu;
  uint64_t next_id = 1;
  std::map<uint64_t, PyRef> exceptions;  // the exception objects
};

Kept& kept() {
  static Kept* k = new Kept;  // never destroyed: callables may outlive exit
  return *k;
}

// The kept exception a message names, removed from the table; null if none.
nb::object TakeKept(std::string_view message) {
  const size_t at = message.rfind(kTag);
  if (at == std::string_view::npos) return nb::object();
  const uint64_t id =
      std::strtoull(std::string(message.substr(at + kTag.size())).c_str(), nullptr, 10);
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mu);
  auto it = k.exceptions.find(id);
  if (it == k.exceptions.end()) return nb::object();
  nb::object value = nb::borrow(it->second.get());
  k.exceptions.erase(it);
  return value;
}

}  // namespace

Status CapturePythonError(nb::python_error& error, std::string_view what) {
  const bool interrupt = error.matches(PyExc_KeyboardInterrupt) || error.matches(PyExc_SystemExit);
  error.restore();
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr) PyException_SetTraceback(value, traceback);
  nb::object exc = nb::steal(value);
  Py_XDECREF(type);
  Py_XDECREF(traceback);

  std::string text;
  try {
    text = TypeName(exc);
    const std::string s = nb::cast<std::string>(nb::str(exc));
    if (!s.empty()) text += ": " + s;
  } catch (nb::python_error& e) {
    e.restore();
    PyErr_Clear();
    text = "an exception";
  }
  uint64_t id;
  {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mu);
    id = k.next_id++;
    k.exceptions.emplace(id, PyRef(exc));
    if (k.exceptions.size() > kMaxKept) k.exceptions.erase(k.exceptions.begin());
  }
  std::string message =
      std::string(what) + " raised " + text + " " + std::string(kTag) + std::to_string(id) + "]";
  return interrupt ? Status::Cancelled(message) : Status::InvalidArgument(message);
}

void ThrowStatus(const Status& status) {
  const std::string message(status.message());
  if (nb::object exc = TakeKept(message); exc.is_valid()) {
    // The callable's own exception, with the pipeline's context as a note.
    if (nb::hasattr(exc, "add_note")) {
      try {
        exc.attr("add_note")("sluice: " + status.ToString());
      } catch (nb::python_error& e) {
        e.restore();
        PyErr_Clear();
      }
    }
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    throw nb::python_error();
  }
  nb::object errors = nb::module_::import_("sluice.errors");
  // sluice.errors names its classes after the codes: DataLoss -> DataLossError.
  const std::string name = std::string(StatusCodeName(status.code())) + "Error";
  nb::object cls =
      nb::hasattr(errors, name.c_str()) ? errors.attr(name.c_str()) : errors.attr("UnknownError");
  nb::object value = cls(message);
  PyErr_SetObject(cls.ptr(), value.ptr());
  throw nb::python_error();
}

PyRef::PyRef(nb::handle object) : holder_(std::make_shared<Holder>()) {
  holder_->object = object.ptr();
  Py_XINCREF(holder_->object);
}

bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

PyRef::Holder::~Holder() {
  if (object == nullptr || Finalizing()) return;  // the interpreter is going: leak
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF(object);
  PyGILState_Release(state);
}

}  // namespace sluice::python
